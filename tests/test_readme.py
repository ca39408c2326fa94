"""The README's and docs/'s command lines run as pasted: the curl walkthroughs
against the demo (python a2a_min.py), the client's verbs, signed cards
(docs/security.md) and HTTPS (docs/deploying.md)."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from harness import ROOT

pytestmark = pytest.mark.skipif(not (shutil.which("bash") and shutil.which("curl")),
                                reason="needs bash and curl")


def page(name):
    with open(f"{ROOT}/{name}", encoding="utf-8") as f:
        return f.read()


def run_walkthrough(heading, name="README.md"):
    text = page(name)
    script = re.search(r"```bash\n(.*?)```", text.split(heading)[1], re.S).group(1)
    demo = subprocess.Popen([sys.executable, "a2a_min.py", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+", demo.stdout.readline()).group(0)
        script = script.replace("A2A=http://127.0.0.1:8000", f"A2A={url}")
        # (a job of the same shell, as the demo is when started with &: a
        # bare `wait` would wait for it too)
        job = "sleep 120 & sleeper=$!; trap 'kill $sleeper' EXIT\n"
        out = subprocess.run(["bash", "-c", "set -e\n" + job + script], capture_output=True,
                             text=True, timeout=60,
                             env={**os.environ, "PATH": os.path.dirname(sys.executable)
                                  + os.pathsep + os.environ["PATH"]})
    finally:
        demo.terminate()
        demo.wait(10)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    answers = [json.loads(line) for line in lines if line.startswith("{") and line != "{"]
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    return url, lines, answers, events


def test_jsonrpc_walkthrough():
    url, _, answers, events = run_walkthrough("## Walkthrough: every JSON-RPC operation")
    card = answers[0]
    assert card["supportedInterfaces"][0]["url"] == url + "/"
    by_id = {a["id"]: a for a in answers[1:]}
    assert by_id[1]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "history" not in by_id[3]["result"]
    assert len(by_id[4]["result"]["tasks"]) == 1 and by_id[4]["result"]["nextPageToken"]
    streamed = [e["result"] for e in events if e["id"] == 5]
    assert "task" in streamed[0]
    assert streamed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert by_id[7]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    subscribed = [e["result"] for e in events if e["id"] == 9]
    assert subscribed[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert subscribed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert by_id[10]["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    codes = {i: by_id[i]["error"]["code"] for i in range(11, 19)}
    assert codes == {11: -32002, 12: -32003, 13: -32003, 14: -32003, 15: -32003,
                     16: -32004, 17: -32009, 18: -32601}


def test_http_json_walkthrough():
    _, lines, answers, events = run_walkthrough("## Walkthrough: every HTTP+JSON route")
    assert answers[0]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "history" not in answers[1] and answers[1]["artifacts"]
    assert len(answers[2]["tasks"]) == 2 and "artifacts" in answers[2]["tasks"][0]
    assert "task" in events[0]
    assert any(e.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"
               for e in events)
    assert answers[3]["status"]["state"] == "TASK_STATE_CANCELED"
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    reasons = [a["error"]["details"][0]["reason"] for a in answers[4:9]]
    assert reasons == ["PUSH_NOTIFICATION_NOT_SUPPORTED"] * 4 + ["UNSUPPORTED_OPERATION"]
    assert [t["history"][0]["parts"][0]["text"] for t in answers[9]["tasks"]] == ["for acme"]
    assert "HTTP/1.1 404 Not Found" in lines and "Allow: POST" in [l.strip() for l in lines]
    assert answers[10]["error"]["code"] == 400


def test_call_an_agent_walkthrough():
    """The client's command lines, as pasted, against the demo."""
    url, lines, answers, _ = run_walkthrough("## Call an agent: the client and the command line")
    text = "\n".join(lines)
    assert lines[0].startswith("a2a_min echo") and f"JSONRPC    1.0  {url}/" in text
    assert "COMPLETED" in text and "You said: hello" in text
    assert any(line.startswith("[0] task ") for line in lines)
    waiting = json.loads(text[text.index("\n{\n"):text.index("\n}\n") + 2])
    assert waiting["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "exit status 3" in lines                     # (send's status: it waits for input)


def test_signed_cards_walkthrough(tmp_path):
    """The signing lines as written: make a key with openssl, serve the demo
    with it, then `card` and `check` verify with the public half."""
    from harness import free_port, need
    need("openssl", "the walkthrough makes its key with openssl")
    need("cryptography", "signing needs the cryptography package (the test extra)")
    text = page("docs/security.md")
    block = re.search(r"```bash\n(.*?)```", text.split("## Signed cards and the API catalog")[1],
                      re.S).group(1)
    lines = [line.split("  #")[0].strip() for line in block.strip().splitlines()]
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    def here(line):
        return line.replace("http://127.0.0.1:8000", url).replace(
            "python3 a2a_min.py", f"{sys.executable} {ROOT}/a2a_min.py")
    for line in lines[:2]:
        subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True, capture_output=True)
    assert lines[2].startswith("pip install cryptography")
    server = subprocess.Popen(["bash", "-c", f"exec {here(lines[3])} --port {port}"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        assert "card signed (ES256, kid card-key-1)" in server.stdout.readline()
        card = subprocess.run(["bash", "-c", here(lines[4])], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)
        check = subprocess.run(["bash", "-c", here(lines[5])], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
    finally:
        server.terminate()
        server.wait(10)
    assert card.returncode == 0 and "signature verified: kid card-key-1, ES256" in card.stderr
    assert check.returncode == 0, check.stdout
    assert "PASS  §8.4.3   the card's signatures verify: kid card-key-1, ES256" in check.stdout


def test_tls_walkthrough(tmp_path):
    """The HTTPS lines as written: openssl makes a throw-away CA, a server
    certificate for 127.0.0.1 and alice's client certificate; the demo
    serves mutual TLS with them; curl and the client's list call it."""
    from harness import free_port, need
    need("openssl", "the walkthrough makes its certificates with openssl")
    text = page("docs/deploying.md")
    block = re.search(r"```bash\n(.*?)```", text.split("## HTTPS and mutual TLS")[1],
                      re.S).group(1)
    lines = [line.split("  #")[0].strip() for line in block.strip().splitlines()]
    made = [line for line in lines if line.startswith("openssl ")]
    assert len(made) == 5 and lines[:5] == made
    port = free_port()

    def here(line):
        return line.replace("127.0.0.1:8000", f"127.0.0.1:{port}").replace(
            "python3 a2a_min.py", f"{sys.executable} {ROOT}/a2a_min.py")
    for line in made:
        subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True, capture_output=True,
                       timeout=60)
    serving = [line for line in lines if "--tls-client-ca" in line]
    assert len(serving) == 1
    server = subprocess.Popen(["bash", "-c", f"exec {here(serving[0])} --port {port}"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        assert f"https://127.0.0.1:{port}/" in server.stdout.readline()
        curl = subprocess.run(["bash", "-c", here(lines[7])], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)
        listed = subprocess.run(["bash", "-c", here(lines[8])], cwd=tmp_path,
                                capture_output=True, text=True, timeout=60)
    finally:
        server.terminate()
        server.wait(10)
    assert lines[7].startswith("curl ") and lines[8].startswith("python3 a2a_min.py list ")
    assert json.loads(curl.stdout)["tasks"] == [], (curl.stdout, curl.stderr)
    assert listed.returncode == 0 and listed.stdout == "no tasks\n", listed


def test_the_keys_the_readme_makes_are_not_committed():
    """The signing and TLS lines write keys into the working directory,
    often a checkout: git ignores them."""
    patterns = open(f"{ROOT}/.gitignore", encoding="utf-8").read().split()
    assert "*.pem" in patterns and "*.key" in patterns


def test_the_readmes_first_command_starts_the_demo_from_its_cached_module(tmp_path):
    """README's first command, as pasted (on another port): the demo answers
    its card, and started with -m it runs the module Python cached in
    __pycache__ (a script would be compiled at every start)."""
    first = re.search(r"```bash\n(.*?)```", page("README.md"), re.S).group(1)
    command = first.split("  #")[0].strip()
    assert command == "python3 -m a2a_min", command
    folder = tmp_path / "copy"
    folder.mkdir()
    shutil.copy(f"{ROOT}/a2a_min.py", folder)          # (the file alone, as vendored)
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep
           + os.environ["PATH"]}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for start in range(2):                             # the first writes the cache, the next reads it
        demo = subprocess.Popen(["bash", "-c", f"exec {command} --port 0"], cwd=folder, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            url = re.search(r"http://127\.0\.0\.1:\d+", demo.stdout.readline()).group(0)
            out = subprocess.run(["curl", "-s", f"{url}/.well-known/agent-card.json"],
                                 capture_output=True, text=True, timeout=30)
            assert json.loads(out.stdout)["name"], out.stdout
        finally:
            demo.terminate()
            demo.wait(10)
        cached = list((folder / "__pycache__").glob("a2a_min.*.pyc"))
        assert len(cached) == 1, cached
        written = cached[0].stat().st_mtime_ns if start == 0 else written
        assert cached[0].stat().st_mtime_ns == written     # (read, not written again)
