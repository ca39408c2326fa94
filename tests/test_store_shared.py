"""One task store shared by several processes (a2a_store's SQLiteStore), with real
processes on 127.0.0.1: the threaded server's forked workers, gunicorn's
(WSGI) and uvicorn's (ASGI). A task made in one process is read, listed,
continued, followed, resumed and canceled through another; a server killed
with -9 mid-stream comes back on the same file with its tasks, events, push
configs and artifacts, and ends the task it left running FAILED once the
lease runs out; a worker stopped with SIGTERM ends its running turn FAILED
at once; processes committing to one task at the same time lose no update.

The app is tests/shared_app.py; every answer says which process served it
(X-Pid). Each request is a new connection, and a step that must happen in
another process is repeated, within a time bound, until it does."""

import http.client
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

import a2a_min
import a2a_store
from harness import (ROOT, MemoryTaskStore, free_port, need, process_tree, rpc_body,
                     user_message)
from webhook_receiver import Receiver

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json", "Connection": "close"}
OWNER = ("", None)                     # whose tasks an anonymous client's are, in the store
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


# -- hosts in processes of their own ------------------------------------------------

def _gunicorn():
    program = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    return program if os.path.exists(program) else "gunicorn"


HOSTS = {
    "threads": lambda port, workers, conf: [
        sys.executable, "tests/shared_app.py", "--port", str(port), "--workers", str(workers)],
    "gunicorn": lambda port, workers, conf: [
        _gunicorn(), "-w", str(workers), "-k", "gthread", "--threads", "8",
        "-b", f"127.0.0.1:{port}", "--pythonpath", "tests", "--log-level", "warning",
        "-c", conf, "shared_app:wsgi"],
    "uvicorn": lambda port, workers, conf: [
        sys.executable, "-m", "uvicorn", "shared_app:asgi", "--app-dir", "tests",
        "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
        "--log-level", "warning"],
}
WORKERS = {"threads": 2, "gunicorn": 4, "uvicorn": 4, "postgres-pair": 2}
NEEDS = {"gunicorn": "gunicorn", "uvicorn": "uvicorn"}

# WSGI has no shutdown of its own: gunicorn's hook stops the Server, as
# Server.shutdown's docstring asks of a host that owns its signals.
GUNICORN_CONF = """\
def worker_exit(arbiter, worker):
    import shared_app
    shared_app.server.shutdown(shared_app.GRACE)
"""


class Host:
    """shared_app under one host, on the store file ``store``."""

    def __init__(self, kind, folder, store, *, lease_ttl=3.0, grace=10.0, workers=None):
        if kind in NEEDS:
            need(NEEDS[kind], f"the {kind} host: needs {kind} (the test extra)")
        self.kind, self.store, self.port = kind, store, free_port()
        self.log = os.path.join(folder, "agent.log")
        self.errors = os.path.join(folder, f"{kind}-{self.port}.err")
        conf = os.path.join(folder, "gunicorn_conf.py")
        with open(conf, "w") as f:
            f.write(GUNICORN_CONF)
        env = {**os.environ, "A2A_STORE": store, "A2A_LEASE_TTL": str(lease_ttl),
               "A2A_GRACE": str(grace), "A2A_AGENT_LOG": self.log}
        with open(self.errors, "w") as err:
            self.proc = subprocess.Popen(
                HOSTS[kind](self.port, workers or WORKERS[kind], conf), cwd=ROOT, env=env,
                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:                            # ready: it serves the card
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            try:
                conn.request("GET", "/.well-known/agent-card.json")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            finally:
                conn.close()
            assert self.proc.poll() is None and time.monotonic() < deadline, \
                f"{kind} did not start: {self.stderr()}"
            time.sleep(0.05)
        answered = set()                       # and a second worker has started
        while len(answered) < min(2, workers or WORKERS[kind]):
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            conn.request("GET", "/.well-known/agent-card.json", headers={"Connection": "close"})
            answered.add(conn.getresponse().getheader("X-Pid"))
            conn.close()
            assert time.monotonic() < deadline, f"{kind}: only {answered} answered"

    def stderr(self, last=3000):
        with open(self.errors) as f:
            return f.read()[-last:]

    def report(self, task):
        """What a test that failed says of the host: the task as stored, its
        agent's notes, the host's processes, where their threads are."""
        stored = a2a_store.open_store(self.store).get(task["id"], OWNER)
        pids = process_tree(self.proc.pid)
        for pid in self.workers():
            os.kill(pid, signal.SIGUSR1)       # shared_app: faulthandler dumps the threads
            time.sleep(0.3)
        return (f"the task now: {stored and stored['status']}; "
                f"agent: {self.agent_log(task['id'])}; processes {pids}; "
                f"stderr: {self.stderr(30000)}")

    def workers(self):
        """The processes that serve (not uvicorn's multiprocessing helper)."""
        pids = set()
        for pid in process_tree(self.proc.pid)[1:]:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"resource_tracker" not in f.read():
                        pids.add(pid)
            except (FileNotFoundError, ProcessLookupError):
                pass                           # gone meanwhile (exiting: ESRCH)
        return pids

    def agent_log(self, task_id):
        """What the agent noted for this task: [{"pid", "what", "at", ...}]."""
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [n for n in map(json.loads, f) if n["task"] == task_id]

    def kill(self):
        """kill -9 every process of the host (its process group)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()
        try:                                   # workers left behind (uvicorn's spawn)
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Balancer:
    """A load balancer on 127.0.0.1: each connection it accepts goes to one
    of ``ports`` at random, byte for byte both ways."""

    def __init__(self, ports):
        import socket
        import threading
        self.ports = ports
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        import threading
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return                          # closed
            port = random.choice(self.ports)
            try:
                backend = socket.create_connection(("127.0.0.1", port), timeout=10)
            except OSError:
                client.close()
                continue
            backend.settimeout(None)
            for a, b in ((client, backend), (backend, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source, sink):
        import socket
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.listener.close()


class PairHost:
    """Two servers (tests/shared_app.py, one process each, on ports of their
    own) on one PostgreSQL database, behind a Balancer: two machines behind
    a load balancer, as the PostgreSQL store is for. Host's interface."""

    kind = "postgres-pair"

    def __init__(self, folder, store, *, lease_ttl=3.0, grace=10.0):
        self.hosts = [Host("threads", folder, store, lease_ttl=lease_ttl, grace=grace,
                           workers=1) for _ in range(2)]
        self.store, self.log = store, self.hosts[0].log
        self.balancer = Balancer([h.port for h in self.hosts])
        self.port = self.balancer.port

    def workers(self):
        return {h.proc.pid for h in self.hosts}

    def agent_log(self, task_id):
        return self.hosts[0].agent_log(task_id)

    def stderr(self, last=3000):
        return "\n".join(h.stderr(last) for h in self.hosts)

    def report(self, task):
        return self.stderr(30000)

    def stop(self):
        self.balancer.close()
        for h in self.hosts:
            h.stop()


def postgres_database():
    """A URL of a new, empty database on the test session's PostgreSQL."""
    import psycopg
    from conftest import postgres_server
    server = postgres_server()
    name = f"shared{os.getpid()}_{next(_databases)}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.url.rsplit("/", 1)[0] + "/" + name


_databases = itertools.count()


# -- a client: one connection per request -------------------------------------------

def call(port, method, params, headers=None):
    """(the pid that answered, the JSON-RPC response)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request("POST", "/", rpc_body(method, params), {**HEADERS, **(headers or {})})
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    return int(resp.getheader("X-Pid")), json.loads(data)


def result(port, method, params):
    pid, answer = call(port, method, params)
    assert "result" in answer, answer
    return pid, answer["result"]


def send(port, text, **fields):
    """SendMessage; (pid, task). A slow one returns at once (and runs on there)."""
    params = {"message": user_message(text, **fields)}
    if text.startswith(("slow", "count")):
        params["configuration"] = {"returnImmediately": True}
    pid, got = result(port, "SendMessage", params)
    return pid, got["task"]


class Stream:
    """An SSE answer read event by event: (id, StreamResponse) pairs."""

    def __init__(self, port, method, params, last_event_id=None, within=15):
        self.deadline = time.monotonic() + within
        headers = dict(HEADERS)
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        self.conn.request("POST", "/", rpc_body(method, params), headers)
        self.resp = self.conn.getresponse()
        self.pid = int(self.resp.getheader("X-Pid"))
        if self.resp.getheader("Content-Type") != "text/event-stream":
            body = self.resp.read()
            self.close()
            raise AssertionError(f"not a stream: {self.resp.status} {body[:500]!r}")

    def next(self):
        """The next event, skipping comments; None when the stream ends."""
        event_id, data = None, None
        while True:
            assert time.monotonic() < self.deadline, "the stream did not end in time"
            try:
                line = self.resp.readline()
            except (OSError, http.client.HTTPException):
                return None                     # the server went away
            if not line:
                return None
            line = line.decode().rstrip("\n")
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif not line and data is not None:
                return event_id, data["result"] if "result" in data else data

    def rest(self):
        events = []
        while (event := self.next()) is not None:
            events.append(event)
        return events

    def close(self):
        self.conn.close()


def subscribe(port, task_id, *, not_on=(), last_event_id=None, within=10):
    """A SubscribeToTask stream served by a process not in ``not_on``."""
    deadline = time.monotonic() + within
    while True:
        stream = Stream(port, "SubscribeToTask", {"id": task_id}, last_event_id)
        if stream.pid not in not_on:
            return stream
        stream.close()
        assert time.monotonic() < deadline, f"every stream was served by {not_on}"


def elsewhere(port, not_on, method, params, within=10):
    """(pid, result) of a call that changes nothing, repeated until a process
    not in ``not_on`` answers it."""
    deadline = time.monotonic() + within
    while True:
        pid, got = result(port, method, params)
        if pid not in not_on:
            return pid, got
        assert time.monotonic() < deadline, f"every answer came from {not_on}"


def state(event):
    """The task state an event tells, or None."""
    if "task" in event:
        return event["task"]["status"]["state"]
    if "statusUpdate" in event:
        return event["statusUpdate"]["status"]["state"]
    return None


def text_of(artifacts):
    return "".join(p.get("text", "") for a in artifacts or () for p in a["parts"])


def streamed_text(events):
    """The artifact text a stream shows: the first Task's, then each update's."""
    text = ""
    for _, event in events:
        if "task" in event:
            text = text_of(event["task"].get("artifacts"))
        elif "artifactUpdate" in event:
            update = event["artifactUpdate"]
            text = (text if update.get("append") else "") + text_of([update["artifact"]])
    return text


def wait_for(check, within, what):
    deadline = time.monotonic() + within
    while not (got := check()):
        assert time.monotonic() < deadline, f"no {what} within {within} s"
        time.sleep(0.05)
    return got


def stored_events(store_path, task_id):
    """The task's event log as the store keeps it: [(seq, event)]."""
    store = a2a_store.open_store(store_path)
    return store.events(task_id)[1]


# -- 1. one task, many processes: every host --------------------------------------------

LEASE_TTL = 1.5                                # of the hosts below: renewed every 0.5 s


@pytest.fixture(scope="module", params=sorted(HOSTS) + ["postgres-pair"])
def host(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "postgres-pair":
        running = PairHost(str(folder), postgres_database(), lease_ttl=LEASE_TTL)
    else:
        running = Host(request.param, str(folder), str(folder / "tasks.db"),
                       lease_ttl=LEASE_TTL)
    yield running
    running.stop()


def test_a_task_is_read_and_listed_through_another_process(host):
    made_on, task = send(host.port, "hello")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    read_on, got = elsewhere(host.port, {made_on}, "GetTask", {"id": task["id"]})
    assert got == task
    listed_on, page = elsewhere(host.port, {made_on}, "ListTasks",
                                {"pageSize": 100, "includeArtifacts": True})
    assert [t for t in page["tasks"] if t["id"] == task["id"]] == [task]
    assert {made_on, read_on, listed_on} <= host.workers()


def test_a_waiting_task_is_continued_through_another_process(host):
    made_on, answer = call(host.port, "SendMessage", {"message": user_message("wait")},
                           {"traceparent": TRACEPARENT})
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    turns = [made_on]
    deadline = time.monotonic() + 10
    while turns[-1] == made_on:                # until a next turn runs elsewhere
        pid, task = send(host.port, "wait", taskId=task["id"])
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        turns.append(pid)
        assert time.monotonic() < deadline, f"every turn ran in {made_on}"
    pid, task = send(host.port, "done", taskId=task["id"])
    turns.append(pid)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert text_of(task["artifacts"]) == "echo: done"
    _, got = result(host.port, "GetTask", {"id": task["id"]})
    said = [m["parts"][0]["text"] for m in got["history"] if m["role"] == "ROLE_USER"]
    expected = ["wait"] * (len(turns) - 1) + ["done"]
    # (The history keeps the newest max_history messages: two a turn.)
    assert said == expected[-len(said):] and len(said) >= min(len(expected), 40)
    # each turn's agent ran in the process its message reached
    starts = [n for n in host.agent_log(task["id"]) if n["what"] == "start"]
    assert [n["pid"] for n in starts] == turns
    # the first turn ran in the caller's trace; each later one in a trace of
    # its own (the request that began it sent none)
    first = starts[0]
    assert first["trace"] == TRACEPARENT[3:35]
    assert all(n["trace"] != first["trace"] for n in starts[1:])


def test_a_running_task_is_followed_through_another_process(host):
    made_on, task = send(host.port, "count12:0.12")
    stream = subscribe(host.port, task["id"], not_on={made_on})
    try:
        events = stream.rest()
    finally:
        stream.close()
    ids = [i for i, _ in events]
    assert ids == list(range(ids[0], ids[0] + len(ids))), ids
    assert "task" in events[0][1] and state(events[-1][1]) == "TASK_STATE_COMPLETED"
    assert sum("artifactUpdate" in e for _, e in events) >= 3   # news from the agent's process
    expected = "".join(f"{i} " for i in range(12))
    assert streamed_text(events) == expected
    _, got = result(host.port, "GetTask", {"id": task["id"]})
    assert text_of(got["artifacts"]) == expected
    assert {n["pid"] for n in host.agent_log(task["id"])} == {made_on} != {stream.pid}


def test_a_quiet_turn_keeps_its_lease_and_completes(host):
    """A turn that commits nothing for longer than lease_ttl is still alive:
    its process renews the lease, and no other process ends it FAILED."""
    made_on, task = send(host.port, f"slow{LEASE_TTL + 1}")
    stream = subscribe(host.port, task["id"], not_on={made_on})
    try:
        events = stream.rest()
    finally:
        stream.close()
    assert state(events[-1][1]) == "TASK_STATE_COMPLETED", events[-1]
    assert streamed_text(events) == "finished slowly"


def test_a_stream_resumes_with_last_event_id_through_another_process(host):
    made_on, task = send(host.port, "count10:0.15")
    first = subscribe(host.port, task["id"])
    try:
        seen = [first.next() for _ in range(3)]   # the Task, then two updates
    finally:
        first.close()
    last = seen[-1][0]
    second = subscribe(host.port, task["id"], not_on={made_on, first.pid}
                       if WORKERS[host.kind] > 2 else {made_on}, last_event_id=last)
    try:
        resumed = second.rest()
    finally:
        second.close()
    ids = [i for i, _ in resumed]
    assert ids == list(range(last + 1, last + 1 + len(ids))), (last, ids)
    assert state(resumed[-1][1]) == "TASK_STATE_COMPLETED"
    log = stored_events(host.store, task["id"])
    assert resumed == [(seq, event) for seq, event in log if seq > last]   # exactly the missed
    assert seen[1:] == [(seq, event) for seq, event in log if seq <= last][-2:]
    assert [seq for seq, _ in log] == list(range(len(log)))


def test_a_subscriber_follows_a_waiting_task_continued_through_another_process(host):
    """Section 3.1.6 across processes: a subscriber of a waiting task, in one
    process, gets one Task and then updates only, when the task is continued
    (SendStreamingMessage) through another process; never SUBMITTED again.
    From the sender's joining on (its stream begins with the Task as its
    message left it), both streams carry the same events with the same ids."""
    made_on, task = send(host.port, "wait")
    watcher = subscribe(host.port, task["id"])
    try:
        assert state(watcher.next()[1]) == "TASK_STATE_INPUT_REQUIRED"
        params = {"message": user_message("count4:0.05", taskId=task["id"],
                                          contextId=task["contextId"])}
        deadline = time.monotonic() + 10
        while True:                            # the continuation served elsewhere
            sender = Stream(host.port, "SendStreamingMessage", params)
            if sender.pid != watcher.pid:
                break
            # Served by the watcher's own process: that turn runs to the end; wait again.
            sender.rest()
            sender.close()
            watcher.close()
            assert time.monotonic() < deadline, "every continuation ran where it was followed"
            made_on, task = send(host.port, "wait")
            params["message"] = user_message("count4:0.05", taskId=task["id"],
                                             contextId=task["contextId"])
            watcher = subscribe(host.port, task["id"])
            assert state(watcher.next()[1]) == "TASK_STATE_INPUT_REQUIRED"
        try:
            sent = sender.rest()
        finally:
            sender.close()
        followed = watcher.rest()
    finally:
        watcher.close()
    assert "task" in sent[0][1] and state(sent[0][1]) == "TASK_STATE_WORKING"
    assert not [e for _, e in sent[1:] if "task" in e]
    assert not [e for _, e in followed if "task" in e], followed   # one Task, read above
    assert state(followed[0][1]) == "TASK_STATE_WORKING"
    assert state(followed[-1][1]) == state(sent[-1][1]) == "TASK_STATE_COMPLETED"
    assert "TASK_STATE_SUBMITTED" not in [state(e) for _, e in followed + sent]
    assert followed[1:] == sent[1:] and followed[0][0] == sent[0][0]
    assert streamed_text(sent) == "0 1 2 3 "
    assert [i for i, _ in followed] == list(range(followed[0][0], followed[-1][0] + 1))


def test_cancel_through_another_process_reaches_the_agent(host):
    deadline = time.monotonic() + 20
    while True:                                # until CancelTask reaches another process
        made_on, task = send(host.port, "slow10")
        stream = subscribe(host.port, task["id"], not_on={made_on})
        asked = time.time()
        canceled_on, canceled = result(host.port, "CancelTask", {"id": task["id"]})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        if canceled_on != made_on:
            break
        stream.close()
        assert time.monotonic() < deadline, f"every CancelTask was served by {made_on}"
    try:
        events = stream.rest()
    finally:
        stream.close()
    assert state(events[-1][1]) == "TASK_STATE_CANCELED"
    woke = wait_for(lambda: [n for n in host.agent_log(task["id"]) if n["what"] == "woke"],
                    5, "wake-up of the agent")
    assert woke[0]["pid"] == made_on and woke[0]["cancelled"] is True
    assert woke[0]["at"] - asked < 2           # told at once, not after its 10 s
    time.sleep(0.3)                            # what the agent said after that was dropped
    _, got = result(host.port, "GetTask", {"id": task["id"]})
    assert got["status"]["state"] == "TASK_STATE_CANCELED" and "artifacts" not in got


# -- 2. kill -9 mid-stream, start again on the same file ----------------------------------

def test_kill_9_mid_stream_and_restart_keeps_tasks_and_fails_the_orphan(tmp_path):
    ttl = 2.5                                  # (the restart must come before it runs out)
    store = str(tmp_path / "tasks.db")
    receiver = Receiver()
    host = Host("threads", str(tmp_path), store, lease_ttl=ttl)
    try:
        _, done = send(host.port, "chunks")
        assert text_of(done["artifacts"]) == "one two three"
        _, waiting = send(host.port, "wait")
        _, config = result(host.port, "CreateTaskPushNotificationConfig", {
            "taskId": waiting["id"], "url": receiver.url("/waiting"), "token": "tok"})
        _, task = send(host.port, "count200:0.05")
        _, running_config = result(host.port, "CreateTaskPushNotificationConfig", {
            "taskId": task["id"], "url": receiver.url("/running")})
        stream = subscribe(host.port, task["id"])
        seen = [stream.next() for _ in range(6)]
        host.kill()
        killed = time.time()
        seen += stream.rest()                  # what was on its way, then the cut
        stream.close()
    finally:
        host.stop()
    assert all(state(e) != "TASK_STATE_COMPLETED" for _, e in seen)
    host = Host("threads", str(tmp_path), store, lease_ttl=ttl)
    try:
        _, got = result(host.port, "GetTask", {"id": task["id"]})
        assert got["status"]["state"] == "TASK_STATE_WORKING", \
            f"ended before the restart was {time.time() - killed:.2f} s old: {got['status']}"
        assert [m["parts"][0]["text"] for m in got["history"]] == ["count200:0.05"]
        last = seen[2][0]                      # resume from the third event seen
        resumed = Stream(host.port, "SubscribeToTask", {"id": task["id"]}, last).rest()
        ids = [i for i, _ in resumed]
        assert ids == list(range(last + 1, last + 1 + len(ids))), (last, ids)
        assert resumed[:len(seen) - 3] == seen[3:]     # replayed from the store
        end = resumed[-1][1]["statusUpdate"]["status"]
        ended = time.time()
        assert end["state"] == "TASK_STATE_FAILED" and "lease" in end["message"]["parts"][0]["text"]
        assert ended - killed < ttl + ttl / 3 + 1.5, ended - killed
        _, got = result(host.port, "GetTask", {"id": task["id"]})
        assert got["status"] == end
        text = streamed_text(seen[:3] + resumed)
        assert text_of(got["artifacts"]) == text == "".join(f"{i} " for i in range(len(text) // 2))
        _, again = result(host.port, "GetTask", {"id": done["id"]})
        assert again == done                   # a finished task, with its artifacts
        _, listed = result(host.port, "ListTasks", {})
        assert {t["id"] for t in listed["tasks"]} == {done["id"], waiting["id"], task["id"]}
        _, got = result(host.port, "GetTaskPushNotificationConfig",
                        {"taskId": waiting["id"], "id": config["id"]})
        assert got == config
        _, got = result(host.port, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
        assert got["configs"] == [running_config]
        # ... and they are used: the restarted server told the webhook of the end
        pushed = wait_for(lambda: [r for r in receiver.wait(1, "/running", timeout=0)
                                   if state(r["body"]) == "TASK_STATE_FAILED"], 5, "push of FAILED")
        assert pushed[0]["body"]["statusUpdate"]["taskId"] == task["id"]
        _, waiting_now = send(host.port, "go on", taskId=waiting["id"])   # and it goes on
        assert waiting_now["status"]["state"] == "TASK_STATE_COMPLETED"
        wait_for(lambda: receiver.wait(1, "/waiting", timeout=0), 5, "push to the waiting task")
    finally:
        host.stop()
        receiver.close()


# -- 3. SIGTERM to one worker while its turn runs -----------------------------------------

@pytest.mark.parametrize("kind", sorted(HOSTS))
def test_sigterm_to_a_worker_ends_its_running_turn_failed(kind, tmp_path):
    grace = 0.5                                # and the lease (30 s) cannot be what ends it
    host = Host(kind, str(tmp_path), str(tmp_path / "tasks.db"), lease_ttl=30, grace=grace)
    try:
        deadline = time.monotonic() + 10
        while True:                            # a turn on one worker, a stream on another
            made_on, task = send(host.port, "slow20")
            try:
                stream = subscribe(host.port, task["id"], not_on={made_on}, within=3)
                break
            except AssertionError:
                result(host.port, "CancelTask", {"id": task["id"]})
                assert time.monotonic() < deadline
        os.kill(made_on, signal.SIGTERM)
        stopped = time.time()
        try:
            events = stream.rest()
        except AssertionError:
            raise AssertionError(f"the stream on {stream.pid} did not end; "
                                 f"{host.report(task)}") from None
        finally:
            stream.close()
        status = events[-1][1]["statusUpdate"]["status"]
        assert status["state"] == "TASK_STATE_FAILED", events[-1]
        assert "shut down" in status["message"]["parts"][0]["text"]
        assert time.time() - stopped < grace + 5
        _, got = elsewhere(host.port, {made_on}, "GetTask", {"id": task["id"]})
        assert got["status"] == status
        wait_for(lambda: made_on not in host.workers(), 10, "exit of the worker")
        # The agent was told (it may not have had the time to say so before
        # its process ended): it never finished, and nothing else ran it.
        notes = host.agent_log(task["id"])
        assert {n["pid"] for n in notes} == {made_on}
        assert all(n["cancelled"] for n in notes if n["what"] == "woke")
    finally:
        host.stop()


def test_sigterm_stops_a_worker_that_lost_the_race_for_a_connection(tmp_path):
    """The threaded server's workers wait on one listening socket; a connection
    wakes all of them, and one accepts it. Another must not then sit in
    accept() (a blocking socket), where a SIGTERM cannot stop it until the
    next connection comes. /proc/PID/wchan shows a worker waiting there."""
    host = Host("threads", str(tmp_path), str(tmp_path / "tasks.db"), grace=0.5)
    try:
        workers, in_accept = host.workers(), set()
        for _ in range(20):                    # the race happens often: watch for it
            result(host.port, "ListTasks", {})
            time.sleep(0.05)
            for pid in workers:
                with open(f"/proc/{pid}/wchan") as f:
                    if "accept" in f.read():
                        in_accept.add(pid)
            if in_accept:
                break
        host.proc.send_signal(signal.SIGTERM)
        try:
            code = host.proc.wait(5)
        except subprocess.TimeoutExpired:
            left = host.workers()
            pytest.fail(f"still running 5 s after SIGTERM: workers {left} (seen waiting in "
                        f"accept(): {in_accept})")
        assert code == 0
        assert in_accept == set(), f"workers {in_accept} waited in a blocking accept()"
    finally:
        host.stop()


@pytest.mark.parametrize("delay", [0.002, 0.005, 0.01])
def test_sigterm_while_a_dead_worker_is_replaced_stops_the_new_one_too(tmp_path, delay):
    """kill -9 of a worker, then SIGTERM to the server a few milliseconds
    later, while it starts a worker in the dead one's place: the new worker
    is stopped with the rest and the server exits. (It once forked the new
    worker after stop() had signalled the others, and waited for it for ever:
    this hung 20 times in 20 at these delays.)"""
    host = Host("threads", str(tmp_path), str(tmp_path / "tasks.db"), grace=0.5)
    try:
        os.kill(min(host.workers()), signal.SIGKILL)
        time.sleep(delay)
        host.proc.send_signal(signal.SIGTERM)
        try:
            host.proc.wait(10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 10 s after SIGTERM: workers {host.workers()}; "
                        f"{where_they_are(host)}")
    finally:
        host.stop()


def where_they_are(host):
    """The server's and its workers' threads (shared_app dumps them on SIGUSR1)."""
    for pid in [host.proc.pid, *host.workers()]:
        os.kill(pid, signal.SIGUSR1)
    time.sleep(0.5)
    return f"stderr: {host.stderr(20000)}"


def test_a_worker_that_does_not_stop_is_killed_and_the_server_ends(tmp_path):
    """A worker that never acts on SIGTERM (here: stopped, SIGSTOP) is killed
    grace + 5 seconds after the stop, and the server exits."""
    host = Host("threads", str(tmp_path), str(tmp_path / "tasks.db"), grace=0.5)
    try:
        stuck, other = sorted(host.workers())
        os.kill(stuck, signal.SIGSTOP)
        started = time.monotonic()
        host.proc.send_signal(signal.SIGTERM)
        try:
            code = host.proc.wait(15)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 15 s after SIGTERM; {where_they_are(host)}")
        took = time.monotonic() - started
        assert code == 0 and 5.0 < took < 10, (code, took)
        assert "still running 5.5 s after the stop: killed" in host.stderr()
        assert not os.path.exists(f"/proc/{stuck}") and not os.path.exists(f"/proc/{other}")
    finally:
        host.stop()


# -- 4. many processes committing to one task ---------------------------------------------

def test_processes_committing_to_one_task_lose_no_update(tmp_path):
    path = str(tmp_path / "tasks.db")
    store = a2a_store.SQLiteStore(path)
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"},
            "metadata": {"count": 0, "by": []}}
    store.commit(task, OWNER, 0, {"task": task}, holder="test")
    processes, commits = 4, 50
    start = time.time() + 0.5
    children = []
    for n in range(processes):
        pid = os.fork()
        if pid == 0:                           # a writer: read, change, commit; retry if beaten
            code = 1
            try:
                mine = a2a_store.SQLiteStore(path)
                time.sleep(max(0.0, start - time.time()))
                conflicts, deadline = 0, time.monotonic() + 30
                for i in range(commits):
                    while time.monotonic() < deadline:
                        now = mine.get("t", OWNER)
                        meta = now["metadata"]
                        changed = {**now, "metadata": {"count": meta["count"] + 1,
                                                       "by": meta["by"] + [[n, i]]}}
                        event = {"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {
                            "artifactId": f"{n}-{i}", "parts": [{"text": str(meta["count"] + 1)}]}}}
                        try:
                            mine.commit(changed, OWNER, now.version, event, holder=f"p{n}")
                            break
                        except a2a_min.ConflictError:
                            conflicts += 1
                with open(tmp_path / f"conflicts-{n}", "w") as f:
                    f.write(str(conflicts))
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    for pid in children:
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    conflicts = [int((tmp_path / f"conflicts-{n}").read_text()) for n in range(processes)]
    assert sum(conflicts) > 0                  # they did write at the same time
    final = store.get("t", OWNER)
    total = processes * commits
    assert final["metadata"]["count"] == total and final.version == total + 1
    assert sorted(map(tuple, final["metadata"]["by"])) == \
        [(n, i) for n in range(processes) for i in range(commits)]
    for n in range(processes):                 # each writer's commits in its order
        assert [i for m, i in final["metadata"]["by"] if m == n] == list(range(commits))
    log = store.events("t")[1]
    assert [seq for seq, _ in log] == list(range(total + 1))
    assert [int(e["artifactUpdate"]["artifact"]["parts"][0]["text"]) for _, e in log[1:]] == \
        list(range(1, total + 1))              # event k was written by the k-th commit


# -- 5. workers without a shared store ----------------------------------------------------

def test_workers_without_a_store_are_refused(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "A2A_STORE"}
    done = subprocess.run([sys.executable, "a2a_min.py", "--workers", "2", "--port",
                           str(free_port())], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode != 0
    assert "--workers" in done.stderr and "--store" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    server = a2a_min.Server(lambda text: text, store=MemoryTaskStore())   # not for workers
    with pytest.raises(ValueError, match="store"):
        a2a_min.serve(server, "127.0.0.1", free_port(), workers=2)


def test_two_processes_racing_to_continue_one_task_take_one_message(host):
    """Two continuations of one waiting task, sent at the same moment to
    (often) different processes: exactly one turn begins, the other is told
    the task is still working on the previous message, and the history holds
    the winner's message once. Raced until the two landed on two processes."""
    import threading
    apart, deadline = False, time.monotonic() + 20
    while not apart:
        assert time.monotonic() < deadline, "the two messages never reached two processes"
        _, task = send(host.port, "wait")
        barrier, answers = threading.Barrier(2), []

        def go():
            barrier.wait()
            answers.append(call(host.port, "SendMessage", {
                "message": user_message("slow0.5", taskId=task["id"]),
                "configuration": {"returnImmediately": True}}))
        racers = [threading.Thread(target=go) for _ in range(2)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(15)
        won = [a for _, a in answers if "result" in a]
        lost = [a for _, a in answers if "error" in a]
        assert len(won) == 1 and len(lost) == 1, answers
        assert lost[0]["error"]["code"] == -32004
        assert "still working" in lost[0]["error"]["message"]
        _, got = result(host.port, "GetTask", {"id": task["id"]})
        said = [m["parts"][0]["text"] for m in got["history"] if m["role"] == "ROLE_USER"]
        assert said == ["wait", "slow0.5"]
        apart = answers[0][0] != answers[1][0]
