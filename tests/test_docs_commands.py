"""The command lines of docs/ that tests/test_readme.py does not run, run as
pasted (a port of the test's own in place of 8000 and 50051, the suite's
PostgreSQL in place of db.internal): the WSGI and ASGI hosts, the SQLite
store and its workers, the PostgreSQL store, ``serve --exec`` and
``--echo``, the gRPC companion and its Python call, and the 0.3 curl line.
The ``pip install`` lines name extras that setup.cfg has (CI installs them);
the grpcurl line names a proto and a method that exist (grpcurl is not a
package this machine can install). The performance page's counting and start-up
lines run too (run.py needs wrk and the SDK's venv, instructions.py valgrind and
minutes: benchmarks, not tests), and so do tokens.py's servers, whose streams it
counts the chunks of."""

import configparser
import http.client
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time

import pytest

from harness import ROOT, exercise, free_port, need, rpc_body, user_message

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
BIN = os.path.dirname(sys.executable)


def lines_of(page, heading, nth=0):
    """The command lines of the ``nth`` bash block after ``heading`` in docs/``page``,
    without their comments (a line ending in a backslash joined to the next)."""
    with open(os.path.join(ROOT, "docs", page), encoding="utf-8") as f:
        text = f.read().split(heading, 1)[1]
    block = re.findall(r"```bash\n(.*?)```", text, re.S)[nth]
    block = block.replace("\\\n", " ")
    return [line.split("  #")[0].strip() for line in block.strip().splitlines()]


def here(line, port, grpc_port=None):
    line = line.replace("python3 a2a_min.py", f"{sys.executable} {ROOT}/a2a_min.py")
    line = line.replace(":8000", f":{port}")
    line = line.replace("--port 8000", f"--port {port}")
    if grpc_port is not None:
        line = line.replace("50051", str(grpc_port))
    return line


def start(line, port, cwd=ROOT, env=None):
    """Run ``line`` with bash (the venv's commands first on PATH), and wait
    until it serves the card on ``port``."""
    env = {**os.environ, **(env or {}), "PATH": BIN + os.pathsep + os.environ["PATH"]}
    proc = subprocess.Popen(["bash", "-c", "exec " + line], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/.well-known/agent-card.json")
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, (line, proc.stderr.read())
        time.sleep(0.1)


def stop(proc):
    import signal
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def call(port, method, params):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/", rpc_body(method, params), HEADERS)
    answer = json.loads(conn.getresponse().read())
    conn.close()
    return answer


def text_of(task):
    return "".join(part.get("text", "") for artifact in task.get("artifacts", ())
                   for part in artifact["parts"])


def test_the_wsgi_and_asgi_lines():
    for line in lines_of("deploying.md", "The same server runs under WSGI and ASGI hosts"):
        assert line.split()[0] in ("gunicorn", "uvicorn"), line
        need(line.split()[0], f"the {line.split()[0]} line (the test extra)")
        port = free_port()
        proc = start(here(line, port), port)
        try:
            exercise(port)
        finally:
            stop(proc)


def test_the_sqlite_store_lines(tmp_path):
    """``--store tasks.db`` keeps a task across a restart; ``--workers 4``
    serves from four processes on one port."""
    alone, workers = lines_of("deploying.md", "## Keeping tasks: in memory, in SQLite")
    port = free_port()
    proc = start(here(alone, port) + f" --port {port}", port, cwd=tmp_path)
    try:
        task = call(port, "SendMessage", {"message": user_message("keep me")})["result"]["task"]
    finally:
        stop(proc)
    proc = start(here(alone, port) + f" --port {port}", port, cwd=tmp_path)
    try:
        assert call(port, "GetTask", {"id": task["id"]})["result"]["id"] == task["id"]
    finally:
        stop(proc)
    assert workers.endswith("--workers 4")
    port = free_port()
    proc = start(here(workers, port) + f" --port {port}", port, cwd=tmp_path)
    try:
        exercise(port)
        children = open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()
        assert len(children) == 4, children
    finally:
        stop(proc)


def test_the_postgres_lines():
    from conftest import postgres_server
    url = postgres_server().url
    install, serve = lines_of("deploying.md", "keep the\ntasks in PostgreSQL")
    assert install == "pip install '.[postgres]'" and "postgres" in extras()
    line = serve.replace("postgresql://a2a@db.internal/a2a", url)
    assert line != serve
    port = free_port()
    proc = start(here(line, port) + f" --port {port}", port)
    try:
        exercise(port)
    finally:
        stop(proc)


def test_the_exec_and_echo_lines(tmp_path):
    upper, tool, echo = lines_of("deploying.md", "## Any program as the agent: `serve --exec`")
    (tmp_path / "my_tool").write_text(
        "#!/bin/sh\n# the docs' ./my_tool: two JSON objects, one after the other\n"
        "test \"$1\" = --json && printf '{\"a\": 1}{\"b\": 2}'\n")
    (tmp_path / "my_tool").chmod(0o755)
    for line, text, expected in ((upper, "hello", "HELLO"), (tool, "x", '{"a": 1}{"b": 2}'),
                                 (echo, "echo me", "echo me")):
        port = free_port()
        proc = start(here(line, port) + f" --port {port}", port, cwd=tmp_path)
        try:
            answer = call(port, "SendMessage", {"message": user_message(text)})
            task = answer["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", answer
            assert text_of(task).strip() == expected, (line, task)
            if line is tool:                   # --chunk '}': one chunk per object
                stream = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                stream.request("POST", "/message:stream",
                               json.dumps({"message": user_message(text)}), HEADERS)
                chunks = [json.loads(line[6:]) for line in
                          stream.getresponse().read().decode().splitlines()
                          if line.startswith("data: ")]
                updates = [c["artifactUpdate"] for c in chunks if "artifactUpdate" in c]
                # each chunk goes out as the program writes it, so the end may
                # come after the last one went: then an empty chunk says lastChunk
                if updates[-1]["artifact"]["parts"] == [{"text": ""}]:
                    updates.pop()
                assert [u["artifact"]["parts"][0]["text"] for u in updates] == [
                    '{"a": 1}', '{"b": 2}'], chunks
                assert [c["artifactUpdate"].get("lastChunk", False) for c in chunks
                        if "artifactUpdate" in c][-1] is True, chunks
        finally:
            stop(proc)


def test_the_grpc_lines():
    need("grpc", "the gRPC companion needs grpcio (the test extra)")
    install, serve = lines_of("deploying.md", "## gRPC: the optional companion")
    assert install == "pip install '.[grpc]'" and "grpc" in extras()
    port, grpc_port = free_port(), free_port()
    proc = start(here(serve, port, grpc_port), port)
    try:
        with open(os.path.join(ROOT, "docs", "deploying.md"), encoding="utf-8") as f:
            text = f.read().split("## gRPC: the optional companion", 1)[1]
        python = re.findall(r"```python\n(.*?)```", text, re.S)[1]
        assert "127.0.0.1:50051" in python
        scope = {}
        exec(python.replace("50051", str(grpc_port)), scope)
        reply = scope["reply"]
        assert reply.task.status.state == scope["pb"].TASK_STATE_COMPLETED
        scope["channel"].close()
        # grpcurl: the proto it is given, and the method it calls, exist.
        grpcurl = lines_of("deploying.md", "## gRPC: the optional companion", nth=1)[0]
        words = shlex.split(grpcurl.replace('"$GOOGLEAPIS"', "GOOGLEAPIS"))
        proto = os.path.join(ROOT, words[words.index("-import-path") + 1],
                             words[words.index("-proto") + 1])
        service, method = words[-1].rsplit("/", 1)
        with open(proto, encoding="utf-8") as f:
            source = f.read()
        assert service == "lf.a2a.v1.A2AService" and "package lf.a2a.v1;" in source
        assert f"rpc {method}(" in source
    finally:
        stop(proc)


def test_the_0_3_curl_line():
    """docs/compatibility.md's 0.3 message/send, against ``--compat 0.3``."""
    with open(os.path.join(ROOT, "docs", "compatibility.md"), encoding="utf-8") as f:
        text = f.read().split("## A2A 0.3 clients too", 1)[1]
    line = re.findall(r"```bash\n(.*?)```", text, re.S)[0]      # (one command, over three lines)
    assert line.startswith("curl ") and line.count("curl ") == 1
    port = free_port()
    proc = start(f"{sys.executable} a2a_min.py --compat 0.3 --port {port}", port)
    try:
        out = subprocess.run(["bash", "-c", line.replace("localhost:8000", f"localhost:{port}")],
                             capture_output=True, text=True, timeout=60)
    finally:
        stop(proc)
    result = json.loads(out.stdout)["result"]
    assert result["kind"] == "task" and result["status"]["state"] == "completed", out.stdout


def extras():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    return set(config["options.extras_require"])


def test_the_signing_pip_line_names_an_extra_there_is():
    with open(os.path.join(ROOT, "docs", "security.md"), encoding="utf-8") as f:
        assert "pip install '.[signing]'" in f.read()
    assert "signing" in extras()


def _performance_lines():
    """The performance page's first block (```text): its command lines."""
    with open(os.path.join(ROOT, "docs", "performance.md"), encoding="utf-8") as f:
        block = re.findall(r"```text\n(.*?)```", f.read(), re.S)[0]
    return [line.split("  #")[0].strip() for line in block.strip().splitlines()]


def test_the_performance_page_counts_work_as_it_says(tmp_path):
    """work_per_request.py, as pasted (fewer requests, and this checkout as the
    other): both columns are counted, and a tree against itself counts the same
    (to a line or two)."""
    line = next(l for l in _performance_lines() if "work_per_request.py" in l)
    argv = shlex.split(line.replace("../other-checkout", ROOT).replace("python3", sys.executable))
    done = subprocess.run(argv + ["--requests", "50", "--top", "5"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-800:]
    counts = re.findall(r"^(a2a_min|before): (\d+) lines, (\d+) Python calls", done.stdout, re.M)
    assert [c[0] for c in counts] == ["a2a_min", "before"], done.stdout
    # (the same tree, but each run meets the store's batched eviction at its
    # own point: a line or two apart in 50 requests)
    ours, again = int(counts[0][1]), int(counts[1][1])
    assert ours > 100 and abs(ours - again) <= ours * 0.02, done.stdout
    assert "a2a_min.py:parse" in done.stdout        # the functions, by the lines they run


def test_the_performance_page_times_a_start_as_it_says():
    """startup.py's line, once: a start to the first card, and the RSS."""
    line = next(l for l in _performance_lines() if "startup.py" in l)
    argv = shlex.split(line.replace("python3", sys.executable))
    argv[argv.index("--"):argv.index("--")] = ["--runs", "1"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-800:]
    assert re.search(r"start to first card: median +[\d.]+ ms .*RSS at first answer [\d.]+ MiB",
                     done.stdout), done.stdout


@pytest.mark.parametrize("host", ["threads", "asyncio"])
def test_the_token_benchmarks_server_streams_the_chunks_it_is_asked_for(host):
    """benchmarks/token_server.py (tokens.py's a2a_min): a message's text N
    gives a stream of N chunks of one artifact, as tokens.py checks before it
    measures."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        from tokens import chunks_in_one_stream
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    port = free_port()
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "benchmarks", "token_server.py"),
                             str(port), host], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
                time.sleep(0.05)
        assert [chunks_in_one_stream(port, n) for n in (1, 20, 200)] == [1, 20, 200]
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_cross_process_benchmark_times_every_event_it_asks_for():
    """benchmarks/cross_process.py, as the performance page runs it (two
    servers on one SQLite file, senders meanwhile): every event committed on
    one reaches the stream on the other, and the line says how long they took."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "cross_process.py"),
                           "--events", "30", "--interval", "0.005", "--load", "2"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-800:]
    assert re.search(r"30 events, SQLite, store_poll 10 ms: p50 [\d.]+ ms, p90 [\d.]+ ms, "
                     r"p99 [\d.]+ ms, max [\d.]+ ms, meanwhile \d+ SendMessage/s from 2 senders",
                     done.stdout), done.stdout + done.stderr[-800:]


@pytest.mark.parametrize("host", ["asyncio", "threads"])
def test_the_listeners_benchmark_counts_every_delivery(host):
    """benchmarks/listeners.py on a small scale: every event of every task
    reaches every stream on it (3 tasks x 4 events x 8 streams each)."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "listeners.py"),
                           "--host", host, "--streams", "24", "--tasks", "3", "--events", "4",
                           "--interval", "0.2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-800:]
    assert re.search(rf"{host}: 24 streams open over 3 tasks; server RSS \d+ MiB before",
                     done.stdout), done.stdout
    assert re.search(r"96 deliveries: delay p50 [\d.]+ ms, p99 [\d.]+ ms, .* \(12 events\)",
                     done.stdout), done.stdout
    assert "GetTask meanwhile" in done.stdout, done.stdout
