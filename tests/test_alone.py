"""a2a_min.py copied alone, with none of its companions: what needs one says
which file to copy, in one line, and everything else still works (the
operations suite runs so in CI: .ci/run, "a2a_min.py alone")."""

import json
import os
import shutil
import subprocess
import sys

from harness import ROOT, free_port, need


def alone(tmp_path):
    shutil.copy(os.path.join(ROOT, "a2a_min.py"), tmp_path)
    return tmp_path


def run(folder, *args, env=None, code=None):
    argv = [sys.executable, "-S", "-c", code] if code else [sys.executable, "-S", "a2a_min.py",
                                                            *args]
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": "", **(env or {})})


def test_a_deployment_flag_verb_or_store_names_the_file_to_copy(tmp_path):
    folder = alone(tmp_path)
    for args, env in ((["--store", "tasks.db"], None), (["--workers", "2"], None),
                      (["--tls-cert", "c.pem"], None), (["send", "http://127.0.0.1:1", "hi"], None),
                      ([], {"A2A_STORE": "tasks.db"})):
        done = run(folder, *args, env=env)
        assert done.returncode == 1 and done.stdout == "", (args, done)
        assert done.stderr.count("\n") == 1 and "needs a2a_cli.py beside a2a_min.py" in \
            done.stderr, (args, done.stderr)
    assert not os.path.exists(folder / "tasks.db")


def test_the_demo_help_and_the_library_need_nothing_else(tmp_path):
    folder = alone(tmp_path)
    helped = run(folder, "--help")
    assert helped.returncode == 0 and "--port" in helped.stdout and "--store" not in \
        helped.stdout.split("With a2a_cli.py")[0]
    done = run(folder, code=(
        "import a2a_min, json\n"
        "server = a2a_min.Server(lambda text: text.upper())\n"
        "task = server.call('SendMessage', {'message': {'messageId': 'm', 'role': 'ROLE_USER',"
        " 'parts': [{'text': 'hi'}]}})['task']\n"
        "print(task['artifacts'][0]['parts'][0]['text'])\n"
        "page = server.handle_http('GET', '/', '', {'accept': 'text/html', 'host': 'localhost'},"
        " b'')\n"
        "print(page.status, dict(page.headers)['Content-Type'])\n"
        "try:\n"
        "    a2a_min.SQLiteStore\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error)\n"))
    lines = done.stdout.splitlines()
    assert lines[0] == "HI", done.stderr
    assert lines[1] == "200 text/plain; charset=utf-8"          # the help, not the console
    assert "a2a_min.SQLiteStore needs the companion module a2a_store.py" in lines[2]
    assert sorted(os.listdir(folder)) in (["a2a_min.py"], ["__pycache__", "a2a_min.py"])


def test_the_demo_serves_alone(tmp_path):
    import http.client
    import time
    folder = alone(tmp_path)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-S", "a2a_min.py", "--port", str(port)], cwd=folder,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "echo agent on http://127.0.0.1:" in proc.stdout.readline()
        for _ in range(50):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/.well-known/agent-card.json")
                assert conn.getresponse().status == 200
                break
            except ConnectionRefusedError:
                time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_process_that_imported_opentelemetry_is_served_the_same_on_every_host(tmp_path):
    """Importing OpenTelemetry (many libraries do) asks a2a_min for nothing:
    a default Server answers the card and SendMessage on every host, and never
    looks for a2a_otel.py (spans only when Server(tracing=...) asks)."""
    need("opentelemetry.trace", "OpenTelemetry's API: pip install -e '.[test]'")
    need("uvicorn", "the ASGI host: needs uvicorn (the test extra)")
    folder = alone(tmp_path)
    shutil.copy(os.path.join(ROOT, "tests", "alone_with_otel.py"), folder)
    done = subprocess.run([sys.executable, "alone_with_otel.py"], cwd=folder, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found.pop("modules") == ["a2a_min", "opentelemetry.trace"], done.stdout
    assert found == {host: ["alone", "HI"] for host in ("in process", "threads", "asyncio",
                                                         "wsgi", "asgi", "lambda")}, found


def test_spans_asked_for_without_a2a_otel_fail_at_construction_naming_the_file(tmp_path):
    need("opentelemetry.trace", "OpenTelemetry's API: pip install -e '.[test]'")
    # (-S: no site-packages, where an installed checkout would lend a2a_otel.py)
    done = subprocess.run([sys.executable, "-S", "-c", "import a2a_min; a2a_min.Server(lambda "
                           "ctx: 'ok', tracing='opentelemetry')"], cwd=alone(tmp_path),
                          capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: Server(tracing=...) needs the companion module "
                           "a2a_otel.py: copy it"), done.stderr


def test_the_catalogs_name_their_file_and_the_cards_need_none(tmp_path):
    """The agent cards (a mounted agent's too) are the core's; the API and AI
    catalogs are a2a_catalog.py's, and without it a 404 says to copy it."""
    done = run(alone(tmp_path), code=(
        "import a2a_min, json\n"
        "s = a2a_min.Server(lambda t: t)\n"
        "s.mount('travel', a2a_min.Server(lambda t: t, name='Travel'))\n"
        "print(s.handle_http('GET', '/.well-known/agent-card.json').status)\n"
        "print(json.loads(s.handle_http('GET', '/travel/.well-known/agent-card.json').body)"
        "['name'])\n"
        "for path in ('/.well-known/ai-catalog.json', '/.well-known/api-catalog'):\n"
        "    r = s.handle_http('GET', path)\n"
        "    print(r.status, json.loads(r.body)['error']['message'])\n"))
    lines = done.stdout.splitlines()
    assert lines[:2] == ["200", "Travel"], done.stderr
    for line in lines[2:4]:
        assert line.startswith("404 ") and "needs the companion module a2a_catalog.py" in line


def test_the_access_log_names_its_file(tmp_path):
    """Server(access_log=...) is a2a_metrics.py's, as metrics=True is: alone, one line says so."""
    done = run(alone(tmp_path), code=(
        "import a2a_min\n"
        "try:\n"
        "    a2a_min.Server(lambda t: t, access_log=True)\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error)\n"))
    assert "Server(access_log=...) needs the companion module a2a_metrics.py" in done.stdout, \
        done.stderr
