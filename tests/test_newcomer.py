"""What a newcomer hit walking through the README (issue 50, item 5): the
command line's messages, each one line with its exit status, run as a user
runs them (a subprocess), and the README's own commands."""

import os
import socket
import subprocess
import sys
import threading

import pytest

from harness import ROOT, free_port


def cli(*args, timeout=30, **env):
    """``python3 a2a_min.py ARGS``: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "a2a_min.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **env})
    return done.returncode, done.stdout, done.stderr


def one_line(err):
    """The error as the command line said it: one line, no traceback, no usage."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "usage:" not in err, err
    return lines[0]


def lines_until(stream, wanted, guard=60):
    """Read ``stream``'s lines until one holds ``wanted`` (a hang guard kills
    the wait after ``guard`` seconds); all of them, the last one the match."""
    seen, found = [], threading.Event()

    def read():
        for line in stream:
            seen.append(line)
            if wanted in line:
                found.set()
                return
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(guard)
    assert found.is_set(), seen
    return seen


# -- Major ---------------------------------------------------------------------------------

def test_the_command_line_shows_its_own_info_lines_on_stderr():
    """--stats-interval's line (INFO, like PostgreSQL's "is back") is seen."""
    proc = subprocess.Popen([sys.executable, "a2a_min.py", "--port", "0",
                             "--stats-interval", "0.2"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = lines_until(proc.stderr, "stats: ")[-1]
        assert " INFO stats: " in line and "store.tasks=0" in line, line
    finally:
        proc.terminate()
        proc.wait(15)


def test_the_readmes_sqlite_line_runs_a_test_that_subclasses_task_store():
    """conftest's SQLite TaskStore is a class: a test may subclass it."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_cli_exec.py::test_the_timeout_holds_while_the_output_becomes_events"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env={**os.environ, "A2A_TEST_STORE": "sqlite"})
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:]


# -- Minor: where it listens ---------------------------------------------------------------

def readme_agent():
    """The README's ten-line agent, as written."""
    import re
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read().split("## Your agent in ten lines")[1]
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


@pytest.mark.parametrize("host", ["serve", "serve_asyncio"])
def test_serve_on_a_busy_port_says_one_line(host):
    """The README's agent (serve(), or serve_asyncio()) beside a program on its port."""
    code = readme_agent()
    assert "port=8001" in code                     # (not 8000, where the demo listens)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = code.replace("port=8001", f"port={port}")
        if host == "serve_asyncio":
            code = code.replace("a2a_min.serve(server,", "import asyncio\n"
                                "asyncio.run(a2a_min.serve_asyncio(server,").replace(
                f"port={port})", f"port={port}))")
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, timeout=30)
    assert done.returncode == 1
    assert one_line(done.stderr) == (f"a2a_min: cannot listen on 127.0.0.1:{port}: Address "
                                     "already in use; pick another port (--port N, "
                                     "serve(port=N)) or stop what uses it")


@pytest.mark.parametrize("server", ["threads", "asyncio"])
def test_an_address_it_cannot_have_is_one_line_naming_what_is_wrong(server):
    status, _, err = cli("--port", "99999", "--server", server)
    assert status == 1 and "a port is 0 to 65535" in one_line(err)
    status, _, err = cli("--host", "10.99.99.99", "--port", "0", "--server", server)
    line = one_line(err)
    assert status == 1 and "this machine has no address 10.99.99.99" in line
    assert "pick another port" not in line


# -- Minor: the command line's messages ----------------------------------------------------

@pytest.fixture
def demo():
    """The demo on a free port: its URL."""
    import re
    proc = subprocess.Popen([sys.executable, "a2a_min.py", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        yield re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline()).group(0)
    finally:
        proc.terminate()
        proc.wait(15)


@pytest.mark.parametrize("stream", [False, True])
def test_send_that_waits_for_input_says_the_line_that_answers_it(demo, stream):
    status, out, err = cli("send", demo, "wait", *(["--stream"] if stream else []))
    assert status == 3, (out, err)
    line = one_line(err)
    assert line.startswith(f"answer it: python3 a2a_min.py send {demo} 'your answer' --task ")
    again = subprocess.run(line.split(": ", 1)[1].replace("python3", sys.executable, 1),
                           shell=True, cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert again.returncode == 0 and "COMPLETED" in again.stdout, again


def test_missing_credentials_name_the_option_that_gives_them():
    import a2a_min
    server = a2a_min.Server(lambda text: text, authenticate=a2a_min.BearerAuth({"t0ken": "me"}))
    httpd = a2a_min.make_http_server(server, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = "http://127.0.0.1:%d" % httpd.server_address[1]
        status, _, err = cli("send", url, "hi", A2A_AUTH="")
        assert status == 1 and "--auth 'Bearer <token>'" in err and "$A2A_AUTH" in err, err
        status, out, _ = cli("send", url, "hi", "--auth", "Bearer t0ken", A2A_AUTH="")
        assert status == 0 and "COMPLETED" in out
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("argv", [["--port", "abc"], ["--workers", "0", "--store", "x.db"],
                                  ["send"], ["send", "http://127.0.0.1:1", "hi", "--nope"],
                                  ["push", "create"]])
def test_a_usage_error_is_one_line_that_says_where_the_options_are(argv):
    status, out, err = cli(*argv)
    assert status == 2 and out == "" and "--help" in one_line(err), err


def test_a_port_given_alone_says_it_is_an_option():
    status, _, err = cli("8000")
    assert status == 2                     # (a command line that does not parse, as README says)
    assert one_line(err) == "a2a_min: 8000: the port is an option: python3 a2a_min.py --port 8000"


def test_the_installed_command_says_so_too(capsys):
    import a2a_cli
    import pytest
    for argv, said in ((["8000"], "8000: the port is an option"), (["sned"], "unknown verb 'sned'")):
        with pytest.raises(SystemExit) as stop:
            a2a_cli.main(argv)             # (what the console script a2a-min runs)
        assert stop.value.code == 2 and said in one_line(capsys.readouterr().err)


def test_metrics_without_its_companion_names_the_file_to_copy(tmp_path):
    """--metrics is the command line's (a2a_cli.py), and counts with a2a_metrics.py."""
    import shutil
    for name in ("a2a_min.py", "a2a_cli.py", "a2a_client.py", "a2a_check.py"):
        shutil.copy(os.path.join(ROOT, name), tmp_path)
    done = subprocess.run([sys.executable, "-S", "a2a_min.py", "--metrics", "--port", "0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "a2a_metrics.py" in one_line(done.stderr)
    os.remove(tmp_path / "a2a_cli.py")
    done = subprocess.run([sys.executable, "-S", "a2a_min.py", "--metrics", "--port", "0"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "a2a_cli.py" in one_line(done.stderr)


def test_the_https_banner_says_how_curl_trusts_it_and_its_curl_lines_show_errors():
    import shutil
    from harness import suite_pki
    if not shutil.which("curl"):
        pytest.skip("needs curl")
    pki = suite_pki()
    proc = subprocess.Popen([sys.executable, "a2a_min.py", "--port", "0", "--tls-cert",
                             pki["cert"], "--tls-key", pki["key"]], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = lines_until(proc.stdout, "/.well-known/agent-card.json")
        assert any("--cacert ca.pem" in line for line in lines), lines
        card = lines[-1].strip()
        assert card.startswith("curl -sS https://127.0.0.1:"), card
        untrusted = subprocess.run(card, shell=True, capture_output=True, text=True, timeout=30)
        assert untrusted.returncode != 0 and "curl: (60)" in untrusted.stderr, untrusted
        trusted = subprocess.run(card + f" --cacert {pki['ca']}", shell=True,
                                 capture_output=True, text=True, timeout=30)
        assert trusted.returncode == 0 and '"supportedInterfaces"' in trusted.stdout
    finally:
        proc.terminate()
        proc.wait(15)


def test_the_performance_page_sets_up_what_its_first_command_needs():
    """wrk, and the reference SDK's virtual environment its --sdk-python names."""
    import re
    with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
        text = f.read()
    setup, commands = text.index("```bash\n"), text.index("```text\n")
    assert setup < commands
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    first = re.search(r"```text\n(.*?)\n", text).group(1)
    sdk = re.search(r"--sdk-python (\S+)/bin/python", first).group(1)
    assert "install wrk" in block and f"python3 -m venv {sdk} && {sdk}/bin/pip install" in block


@pytest.fixture
def live():
    """Serve a Server on a free port (threaded host, in this process): its URL."""
    import a2a_min
    made = []

    def start(server):
        httpd = a2a_min.make_http_server(server, "127.0.0.1", 0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        made.append(httpd)
        return "http://127.0.0.1:%d" % httpd.server_address[1]
    yield start
    for httpd in made:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("binding", ["jsonrpc", "http+json"])
def test_server_busy_says_try_again_once(live, binding):
    import a2a_min

    class Full:
        def __call__(self, ctx):
            return "never"

        def admit(self, ctx):
            raise a2a_min.ServerBusyError("no room for another task; try again shortly")
    url = live(a2a_min.Server(Full()))
    status, _, err = cli("send", url, "hi", "--binding", binding)
    line = one_line(err)
    assert status == 1 and line.count("try again") == 1 and "Retry-After: 1 s" in line, line


def test_version():
    import a2a_min
    status, out, _ = cli("--version")
    assert status == 0 and out == f"a2a_min {a2a_min.__version__} (A2A 1.0)\n"


def test_a_store_in_a_folder_it_cannot_write_says_so():
    """(/proc: a folder there is, where no file can be made, root or not)"""
    status, _, err = cli("--store", "/proc/tasks.db", "--port", "0")
    line = one_line(err)
    assert status == 2 and "cannot make the file /proc/tasks.db in /proc" in line, line
    assert "choose a folder this user may write to" in line


def test_the_bearer_agent_example_has_a_help_page():
    done = subprocess.run([sys.executable, "examples/bearer_agent.py", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and "[port]" in done.stdout and done.stderr == ""


def test_postgresql_away_at_start_is_one_line_and_no_outage():
    """Not "trying it again every 1 s" (an outage's line) and then exit 2."""
    from harness import need
    need("psycopg", "the PostgreSQL store needs psycopg 3 (pip install -e '.[postgres]')")
    status, _, err = cli("--store", f"postgresql://a2a@127.0.0.1:{free_port()}/postgres",
                         "--port", "0")
    line = one_line(err)
    assert status == 2 and "could not be opened" in line and "trying it again" not in line


# -- Nits: what a copied a2a_min.py alone says ---------------------------------------------

def alone(tmp_path, code):
    """Run ``code`` in a folder holding a2a_min.py only (-S: nor the installed
    companions): its stdout."""
    import shutil
    shutil.copy(os.path.join(ROOT, "a2a_min.py"), tmp_path)
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=30, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_browser_beside_no_console_is_told_which_file_gives_it(tmp_path):
    page = alone(tmp_path, "import a2a_min\n"
                 "answer = a2a_min.demo_server().handle_http('GET', '/', '', "
                 "{'accept': 'text/html'}, b'', 'http://127.0.0.1:8000')\n"
                 "print(answer.body.decode())")
    assert "curl -sS" in page and "a2a_console.py: copy it" in page
    assert str(tmp_path) not in page                   # (no path of the server's)


def test_metrics_not_served_says_how_and_no_readme(tmp_path):
    said = alone(tmp_path, "import a2a_min, json\n"
                 "answer = a2a_min.demo_server().handle_http('GET', '/metrics', '', {}, b'', "
                 "'http://127.0.0.1:8000')\n"
                 "print(answer.status, json.loads(answer.body)['error']['message'])")
    assert said.startswith("404 ") and "Server(metrics=True) (--metrics)" in said
    assert "README" not in said


def test_a_webhook_address_refused_is_named_once():
    import a2a_min
    from harness import Client, user_message
    server = a2a_min.Server(lambda text: text, push_notifications=True)
    error = Client(server).error("SendMessage", {"message": user_message("x"), "configuration": {
        "taskPushNotificationConfig": {"url": "http://10.0.0.5:9000/hook"}}})
    assert "the webhook address 10.0.0.5 is not globally routable" in error["message"], error


@pytest.mark.parametrize("version, role", [("0.3", "ROLE_USER"), ("1.0", "user")])
def test_an_a2a_0_3_request_suggests_compat(version, role):
    import a2a_min
    from harness import Client
    headers = {"a2a-version": version, "content-type": "application/json"}
    error = Client(a2a_min.demo_server()).error("SendMessage", {"message": {
        "messageId": "m1", "role": role, "parts": [{"text": "hi"}]}}, headers=headers)
    assert "--compat 0.3" in error["message"], error
    if role == "user":
        assert "A2A 0.3's name for ROLE_USER" in error["message"]


@pytest.mark.parametrize("auth", ["Bearer t0ken", "X-API-Key: t0ken"])
def test_curl_lines_read_a2a_auth_as_auth_takes_it(live, auth):
    """$A2A_AUTH means one thing: what --auth takes (a value, or a header)."""
    import shutil
    import a2a_min
    if not shutil.which("curl"):
        pytest.skip("needs curl")
    check = a2a_min.BearerAuth({"t0ken": "me"}) if auth.startswith("Bearer") else \
        a2a_min.ApiKeyAuth({"t0ken": "me"})
    url = live(a2a_min.Server(lambda text: text, authenticate=check))
    status, _, err = cli("send", url, "hi", "--curl", A2A_AUTH=auth)
    assert status == 0, err
    line = [l for l in err.splitlines() if "SendMessage" in l][0]
    assert "t0ken" not in line
    done = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=30,
                          env={**os.environ, "A2A_AUTH": auth})
    assert '"TASK_STATE_COMPLETED"' in done.stdout, (line, done)


@pytest.mark.parametrize("stream", [False, True])
def test_a_failed_programs_stderr_lines_are_indented(stream):
    import re
    proc = subprocess.Popen([sys.executable, "a2a_min.py", "--port", "0", "--exec",
                             "sh -c 'echo one >&2; echo two >&2; exit 3'"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+", proc.stdout.readline()).group(0)
        status, out, _ = cli("send", url, "hi", *(["--stream"] if stream else []))
    finally:
        proc.terminate()
        proc.wait(15)
    assert status == 1 and "the program exited with 3:\n    one\n    two\n" in out, out
