"""The store watch of one process, on a store that other processes share
(SQLite, PostgreSQL): what it wakes, and what it ends.

Each test runs a Server on one store and commits "from another process"
through a second store on the same database (a process of its own would
be the same to the watch: a commit it did not make). A commit elsewhere
must wake only the streams of the task it changed: 100 idle streams raised
PostgreSQL from 791 to 3,509 transactions a second when each of them read
the store at every commit anywhere. A task evicted elsewhere ends its
streams here with TaskNotFoundError, as an eviction here does (they waited
for ever).
"""

import threading
import time

import pytest

import a2a_min
import a2a_store
from conftest import postgres_server

OWNER = ("", None)          # an anonymous caller's tasks (Server.call's CallContext)


@pytest.fixture(params=["sqlite", "postgres"])
def stores(request, tmp_path):
    """Two stores on one database: (the Server's, another process's)."""
    if request.param == "sqlite":
        path = str(tmp_path / "tasks.db")
        return a2a_store.SQLiteStore(path), a2a_store.SQLiteStore(path)
    import a2a_postgres
    url = postgres_server().url
    schema = f"watch{time.monotonic_ns()}"
    return (a2a_postgres.PostgresStore(url, schema=schema),
            a2a_postgres.PostgresStore(url, schema=schema))


def _waiting_agent(ctx):
    yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "and then?")


def _follow(server, task_id, got):
    """Follow a task with SubscribeToTask in a thread: ``got`` gets each event,
    then "ended", or the error that ended the stream."""
    def run():
        try:
            for _, event in server.call("SubscribeToTask", {"id": task_id}):
                if event is not None:
                    got.append(event)
            got.append("ended")
        except a2a_min.A2AError as error:
            got.append(error)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _counting(store, *names):
    """Count the calls of ``store``'s methods ``names`` (on the instance)."""
    counts = dict.fromkeys(names, 0)
    for name in names:
        method = getattr(store, name)

        def counted(*args, _name=name, _method=method, **kwargs):
            counts[_name] += 1
            return _method(*args, **kwargs)
        setattr(store, name, counted)
    return counts


def _wait(check, within, what):
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {within} s"
        time.sleep(0.01)


def _input(task_id):
    return {"message": {"role": "ROLE_USER", "messageId": f"m-{task_id}", "parts": [
        {"text": "x"}]}}


def test_a_commit_elsewhere_wakes_only_the_streams_of_its_task(stores):
    here, there = stores
    server = a2a_min.Server(_waiting_agent, store=here, keepalive_interval=60)
    tasks = [server.call("SendMessage", _input(i))["task"]["id"] for i in range(20)]
    streams = [[] for _ in tasks]
    threads = [_follow(server, task_id, got) for task_id, got in zip(tasks, streams)]
    _wait(lambda: all(streams), 10, "first event on every stream")
    time.sleep(0.3)                             # (the watch has looked at them all)
    counts = _counting(here, "events", "get")
    # Another process works on a task nobody here follows: 40 commits.
    other = {"id": "other", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    _, version, _ = there.commit(other, ("", "someone"), 0, {"task": other})
    for i in range(40):
        _, version, _ = there.commit(other, ("", "someone"), version, {"statusUpdate": {
            "taskId": "other", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}})
        time.sleep(0.005)
    time.sleep(0.3)                             # (the watch looks every store_poll, 0.02 s)
    assert counts["events"] + counts["get"] < len(tasks), counts   # none, give or take
    # A commit elsewhere on a task followed here reaches its stream, and only it.
    first = there.get(tasks[0], OWNER)
    done = {**first, "status": {"state": "TASK_STATE_COMPLETED"}}
    there.commit(done, OWNER, first.version, {"statusUpdate": {
        "taskId": tasks[0], "contextId": first["contextId"], "status": done["status"]}})
    threads[0].join(10)
    assert streams[0][-1] == "ended" and "statusUpdate" in streams[0][-2]
    assert all(len(got) == 1 for got in streams[1:])
    server.shutdown(0.1)


def test_a_stream_on_a_task_evicted_elsewhere_ends_as_not_found(stores):
    here, there = stores
    server = a2a_min.Server(_waiting_agent, store=here, keepalive_interval=60)
    task_id = server.call("SendMessage", _input(0))["task"]["id"]
    got = []
    thread = _follow(server, task_id, got)
    _wait(lambda: got, 10, "first event")
    there.delete(task_id)                       # (as an eviction there does)
    thread.join(10)
    assert not thread.is_alive(), "the stream never ended"
    assert isinstance(got[-1], a2a_min.TaskNotFoundError), got
    server.shutdown(0.1)
