"""A shared store whose database goes away while the server runs, on both
servers (threaded and asyncio): PostgreSQL stopped and started again, and
an SQLite file that stops taking writes. Every request gets an answer, at
once while the store is known to be down (SERVER_BUSY with Retry-After, not
after a wait for the database); the log says the outage once when it
begins (WARNING) and once when it ends (INFO), without tracebacks; stats()
counts it; and the server serves again by itself once the store is back.
The periodic stats line, which reads the store, runs all along (every
0.2 s): what it meets must never reach a connection.
"""

import http.client
import json
import logging
import os
import subprocess
import sys
import time

import pytest

import a2a_cli
import a2a_min
import a2a_store
from harness import (ROOT, AsyncioHostClient, ThreadsHostClient, free_port, need,
                     scenario_agent, user_message)

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
HOSTS = {"threads": ThreadsHostClient, "asyncio": AsyncioHostClient}
QUICK = 2.0     # seconds: an answer during a known outage (the database's timeouts are 5-10 s)


def _rpc(port, method, params):
    """(seconds taken, HTTP response, JSON-RPC answer) of one call on a new
    connection; an answer there must be (a connection closed without one
    raises)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.monotonic()
    try:
        conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                              "params": params}), HEADERS)
        resp = conn.getresponse()
        body = json.loads(resp.read())
    finally:
        conn.close()
    return time.monotonic() - started, resp, body


def _rest(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    started = time.monotonic()
    try:
        conn.request("GET", path, headers=HEADERS)
        resp = conn.getresponse()
        body = json.loads(resp.read())
    finally:
        conn.close()
    return time.monotonic() - started, resp, body


def _busy(resp, body):
    """Whether an answer is SERVER_BUSY with a Retry-After header."""
    error = body.get("error", body)
    reasons = [d.get("reason") for d in error.get("details", error.get("data", []))]
    return "SERVER_BUSY" in reasons and resp.getheader("Retry-After") is not None


def _wait(check, within, what):
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {within} s"
        time.sleep(0.05)


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def database():
    """A PostgreSQL of this test's own: stopping it touches no other test."""
    from conftest import postgres_server
    postgres_server()                       # (skips, saying what is missing)
    from postgres_server import PostgresServer
    server = PostgresServer(fsync=True)     # (a crash loses no commit: as in production)
    yield server
    server.stop()


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_postgres_stopped_and_started_again(database, host):
    records = _Records()
    logger = logging.getLogger("a2a_min")
    logger.addHandler(records)
    level = logger.level
    logger.setLevel(logging.INFO)           # (setLevel: it also clears what the logger cached)
    server = a2a_min.Server(scenario_agent, store=a2a_store.open_store(database.url))
    a2a_cli.log_stats(server, 0.2)
    client = HOSTS[host](server)
    try:
        port = client.port
        _, _, sent = _rpc(port, "SendMessage", {"message": user_message("before")})
        task_id = sent["result"]["task"]["id"]
        database.halt()
        calls = [("GetTask", {"id": task_id}), ("SendMessage", {"message": user_message("x")}),
                 ("ListTasks", {}), ("CancelTask", {"id": task_id})]
        took = []
        ends = time.monotonic() + 3.0       # past several probes, and stats lines
        while time.monotonic() < ends:
            for method, params in calls:
                seconds, resp, body = _rpc(port, method, params)
                assert _busy(resp, body), (method, resp.status, body)
                took.append((seconds, method))
            seconds, resp, body = _rest(port, f"/tasks/{task_id}")
            assert resp.status == 503 and _busy(resp, body), (resp.status, body)
            took.append((seconds, "GET /tasks"))
            time.sleep(0.1)
        slow = [t for t in took[1:] if t[0] > QUICK]     # (the first found the outage)
        assert not slow, slow
        stats = server.stats()["store"]
        assert stats["down"] and stats["outages"] == 1, stats
        assert stats["refused_while_down"] >= len(took) - 5, (stats, len(took))
        database.start()

        def served():
            _, _, body = _rpc(port, "SendMessage", {"message": user_message("after")})
            return "result" in body
        _wait(served, 30, "answer once the database is back")
        assert _rpc(port, "GetTask", {"id": task_id})[2]["result"]["id"] == task_id
        _wait(lambda: not server.stats()["store"]["down"], 10, "end of the outage")
        stats = server.stats()["store"]
        assert stats["outages"] == 1 and stats["tasks"] >= 2, stats
    finally:
        client.close()
        server.store.close()                # (its listener: before the database stops)
        logger.removeHandler(records)
        logger.setLevel(level)
    said = [(r.levelname, r.getMessage()) for r in records.records if "task store" in
            r.getMessage() and "stats:" not in r.getMessage()]
    said = [(level, text) for level, text in said if "is back" in text or
            f":{database.port}/" in text]   # (not a store of an earlier test's)
    assert [level for level, _ in said] == ["WARNING", "INFO"], said
    assert "cannot be reached" in said[0][1] and "is back" in said[1][1], said
    assert not [r for r in records.records if r.levelno >= logging.ERROR or r.exc_info], \
        [r.getMessage() for r in records.records if r.levelno >= logging.ERROR or r.exc_info]


# -- SQLite: the file stops taking writes ---------------------------------------------
#
# chmod does not stop root writing, nor anyone writing through a file already
# open. What does, for any user: the server's limit on file sizes
# (RLIMIT_FSIZE), lowered to 1 byte from outside (prlimit): every write to
# any file then fails (EFBIG; Python ignores the SIGXFSZ that comes with it),
# as on a disk that went read-only or bad, while reads go on. The server
# runs in a process of its own, logging to a pipe (which the limit spares).

_SERVE = """
import asyncio, logging, sys
import a2a_cli, a2a_min, a2a_store
from harness import scenario_agent
logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                    format="%(levelname)s %(message)s")
host, path, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
server = a2a_min.Server(scenario_agent, store=a2a_store.SQLiteStore(path, probe_every=0.5))
a2a_cli.log_stats(server, 0.2)
if host == "threads":
    a2a_min.serve(server, "127.0.0.1", port, grace=0)
else:
    asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", port, grace=0))
"""


def _limit_writes(pid, limit):
    import resource
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_sqlite_file_stops_taking_writes_and_takes_them_again(tmp_path, host):
    import resource
    if not hasattr(resource, "prlimit"):
        pytest.skip("needs resource.prlimit (Linux) to stop the server's writes")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.path.join(ROOT, "tests")])}
    proc = subprocess.Popen([sys.executable, "-c", _SERVE, host, str(tmp_path / "tasks.db"),
                             str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        def up():
            try:
                return "result" in _rpc(port, "SendMessage",
                                        {"message": user_message("before")})[2]
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                return False
        _wait(up, 30, "server")
        task_id = _rpc(port, "SendMessage", {"message": user_message("kept")})[2][
            "result"]["task"]["id"]
        _limit_writes(proc.pid, 1)
        took = []
        ends = time.monotonic() + 2.0       # past several probes, and stats lines
        while time.monotonic() < ends:
            seconds, resp, body = _rpc(port, "SendMessage", {"message": user_message("x")})
            assert _busy(resp, body), (resp.status, body)
            took.append(seconds)
            seconds, resp, body = _rpc(port, "CancelTask", {"id": task_id})
            assert _busy(resp, body) or body["error"]["code"] == -32002, body  # (not cancelable)
            took.append(seconds)
            seconds, resp, body = _rpc(port, "GetTask", {"id": task_id})   # reads go on
            assert body["result"]["id"] == task_id, body
            took.append(seconds)
            time.sleep(0.05)
        assert max(took) < QUICK, took
        _limit_writes(proc.pid, resource.RLIM_INFINITY)

        def served():
            return "result" in _rpc(port, "SendMessage", {"message": user_message("after")})[2]
        _wait(served, 30, "answer once the file takes writes again")
        time.sleep(0.3)                     # (the next stats line)
        _rpc(port, "GetTask", {"id": task_id})
        time.sleep(0.3)
        _rpc(port, "GetTask", {"id": task_id})
    finally:
        proc.terminate()
        try:
            _, log = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, log = proc.communicate()
    lines = log.splitlines()
    # The one request whose agent ran before the outage was found is logged
    # as refused; no agent runs while it is known (none is refused after).
    refusals = [line for line in lines if line.startswith("INFO agent refused")]
    assert len(refusals) <= 1, refusals
    said = [line for line in lines if "task store tasks.db" in line and line not in refusals]
    assert [line.split()[0] for line in said] == ["WARNING", "INFO"], log
    assert "cannot be written" in said[0] and "is back" in said[1], said
    assert not [line for line in lines if line.startswith(("ERROR", "Traceback"))], log
    stats = [line for line in lines if line.startswith("INFO stats:")]
    assert any("store.outages=1" in line for line in stats), stats
    assert any("store.down=True" in line for line in stats), stats
    refused = [int(part.split("=")[1].rstrip(","))
               for line in stats for part in line.split() if "refused_while_down=" in part]
    assert refused and max(refused) > 0, stats
