"""What only the PostgreSQL store (a2a_postgres) has, against a real
PostgreSQL server that the tests start (tests/postgres_server.py): wake-ups
by LISTEN/NOTIFY and by polling, the database going away and coming back
(mid-stream too), a pool that is all lent, a statement past its timeout, a
schema from a newer version and one from an older, processes migrating at
once, and the Lambda handler on two local runners sharing one database.

The store contract itself is held against PostgreSQL in
test_store_contract.py (its "postgres" backend), and two servers on one
database behind a load balancer in test_store_shared.py ("postgres-pair").
"""

import http.client
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import a2a_min
import a2a_store
from conftest import postgres_server, postgres_store
from harness import ROOT, Client, Live, free_port, scenario_agent, user_message

ALICE = ("", "alice")


def task(task_id, state="TASK_STATE_WORKING", second=0):
    return {"id": task_id, "contextId": "ctx",
            "status": {"state": state, "timestamp": "2025-01-01T00:00:%02d.000Z" % second}}


@pytest.fixture
def url():
    return postgres_server().url


def _wait(check, within, what):
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {within} s"
        time.sleep(0.01)


# -- wake-ups -------------------------------------------------------------------------

def test_a_commit_elsewhere_moves_changed_by_notify_at_once(url):
    """Another store on the same tables (another process's) changes a task:
    this one's changed() moves within milliseconds (NOTIFY), long before its
    ``poll`` of 30 s would have."""
    schema = f"wake{os.getpid()}"
    here = a2a_min_store(url, schema, poll=30)
    there = a2a_min_store(url, schema, poll=30)
    there.commit(task("t1"), ALICE, 0)
    _wait(lambda: here._listener is not None and here._listener.connected or
          here.changed() is None, 5, "listener")
    before = here.changed()
    started = time.monotonic()
    there.commit(task("t1", second=1), ALICE, 1, {"statusUpdate": {}})
    _wait(lambda: here.changed() != before, 5, "notification")
    assert time.monotonic() - started < 1.0


def test_without_listen_changed_moves_every_time(url):
    """listen=False (Lambda, a pooler in transaction mode): every look is news,
    so streams poll the table every store_poll."""
    store = a2a_min_store(url, f"nolisten{os.getpid()}", listen=False)
    assert store.changed() != store.changed()
    assert store._listener is None


def test_on_lambda_the_store_does_not_listen(url, monkeypatch):
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "a2a")
    assert a2a_min_store(url, f"lambda{os.getpid()}").listen is False


def a2a_min_store(url, schema, **options):
    import a2a_postgres
    return a2a_postgres.PostgresStore(url, schema=schema, **options)


# -- faults ---------------------------------------------------------------------------

def test_a_pool_all_lent_is_server_busy_after_pool_timeout(url):
    store = a2a_min_store(url, f"pool{os.getpid()}", pool=1, pool_timeout=0.3)
    held = store._borrow()
    try:
        started = time.monotonic()
        with pytest.raises(a2a_min.ServerBusyError) as caught:
            store.get("t1", ALICE)
        assert 0.25 < time.monotonic() - started < 3
        assert "all 1 connections" in caught.value.message and "try again" in caught.value.message
    finally:
        store._give_back(held)
    assert store.get("t1", ALICE) is None            # and served again once one is back


def test_a_statement_past_its_timeout_is_server_busy_and_writes_nothing(url):
    """A task whose row another transaction holds locked: the commit waits
    statement_timeout, is canceled, and answered ServerBusyError; the task
    is as it was."""
    import psycopg
    schema = f"timeout{os.getpid()}"
    store = a2a_min_store(url, schema, statement_timeout=0.3)
    store.commit(task("t1"), ALICE, 0)
    with psycopg.connect(url) as other:
        other.execute(f"SET search_path TO {schema}")
        other.execute("SELECT 1 FROM a2a_tasks WHERE id = 't1' FOR UPDATE")
        with pytest.raises(a2a_min.ServerBusyError) as caught:
            store.commit(task("t1", second=1), ALICE, 1, {"statusUpdate": {}})
        assert "did not answer within 0.3 s" in caught.value.message
        other.rollback()
    got = store.get("t1", ALICE)
    assert got.version == 1 and store.events("t1") == (0, [])
    store.commit(task("t1", second=1), ALICE, 1, {"statusUpdate": {}})   # and works after


def test_a_newer_schema_is_refused_saying_what_to_do(url):
    import psycopg
    schema = f"newer{os.getpid()}"
    a2a_min_store(url, schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"UPDATE {schema}.a2a_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(RuntimeError) as caught:
        a2a_min_store(url, schema)
    assert "schema version 99" in str(caught.value) and "newer" in str(caught.value)


def test_an_unreachable_database_is_refused_at_start_naming_it(url):
    with pytest.raises(RuntimeError) as caught:
        a2a_min_store(f"postgresql://a2a:secret@127.0.0.1:{free_port()}/postgres", "x",
                      connect_timeout=2)
    text = str(caught.value)
    assert "could not be opened" in text and "start the database" in text
    assert "secret" not in text


def test_processes_starting_at_once_migrate_exactly_once(url):
    """Eight processes open a new schema at the same moment: the advisory
    lock lets one create the tables; every one starts."""
    schema = f"race{os.getpid()}"
    code = ("import sys; sys.path.insert(0, %r); import a2a_postgres; "
            "a2a_postgres.PostgresStore(%r, schema=%r); print('ok')" % (ROOT, url, schema))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(8)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(out.strip() == "ok" for out, _ in outs), [err for _, err in outs]
    import psycopg
    from a2a_postgres import POSTGRES_SCHEMA_VERSION
    with psycopg.connect(url) as conn:
        assert conn.execute(f"SELECT value FROM {schema}.a2a_meta").fetchall() == \
            [(str(POSTGRES_SCHEMA_VERSION),)]


def test_a_version_3_schema_gets_the_sends_table(url):
    """Version 4 added a2a_sends (idempotent sends): tables of version 3 are
    brought to it, keep their tasks, and record sends from then on."""
    import psycopg
    from a2a_postgres import POSTGRES_SCHEMA_VERSION
    schema = f"older{os.getpid()}"
    a2a_min_store(url, schema).commit(task("t1"), ALICE, 0)
    with psycopg.connect(url, autocommit=True) as conn:     # as version 3 left them
        conn.execute(f"DROP TABLE {schema}.a2a_sends")
        conn.execute(f"UPDATE {schema}.a2a_meta SET value = '3' WHERE key = 'schema_version'")
    store = a2a_min_store(url, schema)
    assert POSTGRES_SCHEMA_VERSION == 4
    with psycopg.connect(url) as conn:
        assert conn.execute(f"SELECT value FROM {schema}.a2a_meta").fetchall() == [("4",)]
    assert store.get("t1", ALICE) == task("t1")
    assert store.claim_send(ALICE, "m1", "t1", 60) is None
    assert list(store.claim_send(ALICE, "m1", "t", 60))[:3] == ["t1", None, None]
    store.close()


def test_the_database_going_away_and_back_mid_stream(tmp_path):
    """A stream follows a task while its database restarts: meanwhile calls
    are answered ServerBusyError (503, retry) naming the task store, while
    the open stream waits (as the README says: it was ended with that
    error, -32603); the agent's turn waits for the database (write_wait)
    and goes on once it is back, and the stream goes on with it: every
    event, in order, none lost and none twice, to the end. A client that
    resumes with Last-Event-ID meanwhile gets the same."""
    from postgres_server import PostgresServer
    database = PostgresServer(fsync=True)     # (a crash loses no commit: as in production)
    try:
        go_on, finish = threading.Event(), threading.Event()

        def agent(ctx):
            yield a2a_min.status_update("TASK_STATE_WORKING")
            go_on.wait(30)
            yield a2a_min.status_update("TASK_STATE_WORKING", "the database is back")
            finish.wait(30)
            yield "after"
        server = a2a_min.Server(agent, store=a2a_store.open_store(database.url),
                                keepalive_interval=0.2)
        client = Client(server)
        live = Live(server, timeout=30)
        first = _sse(live, "SendStreamingMessage", {"message": user_message("x")})
        seen = [next(first), next(first)]               # the Task, WORKING
        task_id = seen[0][1]["result"]["task"]["id"]
        database.halt()
        answer = client.call("GetTask", {"id": task_id})
        assert answer["error"]["code"] == -32603, answer
        assert "task store" in answer["error"]["message"]
        assert "try again" in answer["error"]["message"]
        time.sleep(0.5)                                 # (keep-alives meanwhile: no error)
        go_on.set()                                     # its next commit waits for the database
        time.sleep(0.5)
        database.start()
        seen.append(next(first))
        assert "the database is back" in json.dumps(seen[-1]), seen[-1]
        resumed = _sse(live, "SubscribeToTask", {"id": task_id}, last_event_id=seen[1][0])
        again = [next(resumed)]
        finish.set()
        seen += list(first)
        again += list(resumed)
        for events in (seen, again[1:]):
            assert all("result" in event for _, event in events), events
        ids = [i for i, _ in seen]
        assert ids == list(range(len(ids))), seen
        assert again == seen[2:], (again, seen)
        assert seen[-1][1]["result"]["statusUpdate"]["status"]["state"] == \
            "TASK_STATE_COMPLETED", seen[-1]
        got = client.result("GetTask", {"id": task_id})
        assert got["artifacts"][0]["parts"] == [{"text": "after"}]
        live.close()
    finally:
        database.stop()


def test_a_turn_that_ends_while_the_database_stays_away_ends_failed_once_it_is_back():
    """The agent finishes while the database is away for longer than the
    store waits (write_wait): the task cannot stay WORKING (this process's
    leases would keep it so for ever). Once the database is back the store
    watch ends it FAILED, saying why, and the task takes messages again."""
    from postgres_server import PostgresServer
    database = PostgresServer(fsync=True)     # (a crash loses no commit: as in production)
    try:
        go_on = threading.Event()

        def agent(ctx):
            yield a2a_min.status_update("TASK_STATE_WORKING")
            go_on.wait(30)
            yield "lost"
        server = a2a_min.Server(agent, store=a2a_store.open_store(database.url, write_wait=0.5))
        client = Client(server)
        task_id = client.result("SendMessage", {"message": user_message("x"), "configuration": {
            "returnImmediately": True}})["task"]["id"]
        _wait(lambda: client.result("GetTask", {"id": task_id})["status"]["state"] ==
              "TASK_STATE_WORKING", 10, "the turn's first commit")
        database.halt()
        go_on.set()
        time.sleep(2)                                   # past write_wait: the turn gave up
        assert task_id in server.live.missed
        database.start()
        refused = []

        def ended():
            answer = client.call("GetTask", {"id": task_id})
            if "error" in answer:            # (the database may still be starting)
                refused.append(answer["error"]["data"][0]["reason"])
                return False
            return answer["result"]["status"]["state"] == "TASK_STATE_FAILED"
        _wait(ended, 30, "the watch to end the task")
        assert set(refused) <= {"SERVER_BUSY"}, refused
        got = client.result("GetTask", {"id": task_id})
        assert "could not be written" in got["status"]["message"]["parts"][0]["text"]
        # (the watch forgets the task just after the commit GetTask saw)
        _wait(lambda: not server.live.missed, 10, "the watch to forget the task it ended")
    finally:
        database.stop()


def _sse(live, method, params, last_event_id=None):
    """(id, JSON-RPC response) of each event of a stream, as they come."""
    conn = live.connection(timeout=60)
    headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                          "params": params}), headers)
    event_id = None
    try:
        for line in conn.getresponse():
            line = line.decode().rstrip("\n")
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: "):
                yield event_id, json.loads(line[6:])
    finally:
        conn.close()


# -- serverless: the Lambda handler on two local runners, one database -----------------

class Runner:
    """examples/lambda_local.py with tests/shared_app.py's handler, as a
    Lambda instance (AWS_LAMBDA_FUNCTION_NAME set: the store does not listen)."""

    def __init__(self, store_url, log):
        self.port = free_port()
        env = {**os.environ, "A2A_STORE": store_url, "AWS_LAMBDA_FUNCTION_NAME": "a2a-test",
               "PYTHONPATH": os.path.join(ROOT, "tests"), "A2A_AGENT_LOG": log}
        self.proc = subprocess.Popen(
            [sys.executable, "examples/lambda_local.py", str(self.port), "--handler",
             "shared_app:on_lambda"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        _wait(self._up, 30, "runner")

    def _up(self):
        try:
            self.call("GET", "/.well-known/agent-card.json")
            return True
        except OSError:
            return False

    def call(self, verb, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request(verb, path, None if body is None else json.dumps(body),
                         {"A2A-Version": "1.0", "Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, resp.getheader("X-Pid"), resp.read()
        finally:
            conn.close()

    def rpc(self, method, params):
        status, pid, data = self.call("POST", "/", {"jsonrpc": "2.0", "id": 1, "method": method,
                                                    "params": params})
        return pid, data

    def stop(self):
        self.proc.kill()
        self.proc.wait(10)


def test_lambda_runners_on_one_database_serve_each_others_tasks(tmp_path):
    """Two Lambda instances (local runners) on one database: a task made on
    one is read, listed, continued and canceled on the other; a stream on the
    other follows a task whose agent runs on the first (polling the table)."""
    from test_store_shared import postgres_database
    url = postgres_database()
    log = str(tmp_path / "agent.log")
    first, second = Runner(url, log), Runner(url, log)
    try:
        pid_a, data = first.rpc("SendMessage", {"message": user_message("wait")})
        made = json.loads(data)["result"]["task"]
        assert made["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        pid_b, data = second.rpc("GetTask", {"id": made["id"]})
        assert pid_a != pid_b and json.loads(data)["result"] == made
        _, data = second.rpc("ListTasks", {})
        assert made["id"] in [t["id"] for t in json.loads(data)["result"]["tasks"]]
        _, data = second.rpc("SendMessage", {"message": user_message("done", taskId=made["id"])})
        done = json.loads(data)["result"]["task"]
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        _, data = first.rpc("CancelTask", {"id": made["id"]})
        assert json.loads(data)["error"]["code"] == -32002          # TaskNotCancelable
        _, data = first.rpc("SendMessage", {"message": user_message("wait")})
        waiting = json.loads(data)["result"]["task"]
        _, data = second.rpc("CancelTask", {"id": waiting["id"]})
        assert json.loads(data)["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        # an agent running on the first after its answer (the local runner's
        # process is not frozen, as Lambda's is), followed from the second
        _, data = first.rpc("SendMessage", {"message": user_message("count5:0.1"),
                                            "configuration": {"returnImmediately": True}})
        running = json.loads(data)["result"]["task"]
        status, _, body = second.call("POST", "/", {
            "jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask",
            "params": {"id": running["id"]}})
        text = body.decode()
        assert status == 200 and "TASK_STATE_COMPLETED" in text, text[-500:]
        assert text.count("artifactUpdate") >= 2
    finally:
        first.stop()
        second.stop()


def test_the_suites_store_maker_gives_a_store_of_its_own():
    """(The maker the whole suite runs on with A2A_TEST_STORE=postgres.)"""
    one, two = postgres_store(), postgres_store()
    one.commit(task("t1"), ALICE, 0)
    assert one.get("t1", ALICE) is not None and two.get("t1", ALICE) is None
    server = a2a_min.Server(scenario_agent, store=two)
    assert Client(server).result("SendMessage", {"message": user_message("hello")})["task"][
        "status"]["state"] == "TASK_STATE_COMPLETED"


# -- through a connection pooler ----------------------------------------------------------

def test_through_pgbouncer_in_session_mode_everything_works(url):
    """Two stores (two processes' worth) reach the database through PgBouncer
    in session mode: commits, reads, pages, and the NOTIFY of one heard by the
    other's listener at once."""
    from harness import need
    from postgres_server import Bouncer
    need("/usr/sbin/pgbouncer", "PgBouncer is not here (apt-get install pgbouncer)")
    bouncer = Bouncer(postgres_server(), "session")
    try:
        schema = f"bounced{os.getpid()}"
        here = a2a_min_store(bouncer.url, schema, poll=30)
        there = a2a_min_store(bouncer.url, schema, poll=30)
        there.commit(task("t1"), ALICE, 0)
        here.changed()
        _wait(lambda: here._listener.connected, 5, "listener")
        before = here.changed()
        there.commit(task("t1", second=1), ALICE, 1, {"statusUpdate": {}})
        _wait(lambda: here.changed() != before, 5, "notification through PgBouncer")
        assert here.get("t1", ALICE).version == 2
        assert here.events("t1") == (0, [(0, {"statusUpdate": {}})])
        assert [t["id"] for t in here.list(ALICE)[0]] == ["t1"]
        for i in range(12):                        # past psycopg's prepare threshold
            here.commit(task(f"n{i}", "TASK_STATE_COMPLETED"), ALICE, 0)
        assert here.stats()["tasks"] == 13
    finally:
        bouncer.stop()
