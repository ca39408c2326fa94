"""The server over an SQLite store, in one process: what the store contract
cannot show alone. An event loop is never held up by another process's write
lock; a backup taken while the server runs holds its tasks; the file stops
growing under steady load; a restart on the same file finds every task. (Real
processes sharing a file: tests/test_store_shared.py.)"""

import http.client
import json
import os
import sqlite3
import threading
import time

import pytest

import a2a_min
import a2a_store
from harness import (AsgiHostClient, AsyncioHostClient, Client, need, scenario_agent,
                     user_message, V1)


@pytest.mark.parametrize("host", ["asyncio", "asgi"])
def test_a_write_lock_held_elsewhere_never_delays_the_card_or_gettask(tmp_path, host):
    """On an event loop (the asyncio server, ASGI under uvicorn), a SendMessage to an ``async def`` agent (whose
    turn runs on the loop) waits for the store's write lock (another process
    holds it) on a store thread; meanwhile the loop answers the card and
    GetTask at once."""
    path = str(tmp_path / "tasks.db")

    async def agent(ctx):
        return "done: " + ctx.text
    server = a2a_min.Server(agent, store=a2a_store.SQLiteStore(path, busy_timeout=5))
    if host == "asgi":
        need("uvicorn", "ASGI host: needs uvicorn (the test extra)")
    client = (AsgiHostClient if host == "asgi" else AsyncioHostClient)(server)
    try:
        task_id = client.send("hello")["task"]["id"]
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")               # another process's write, held
        box = {}
        writer = threading.Thread(target=lambda: box.update(answer=client.send("blocked")))
        started = time.monotonic()
        writer.start()
        time.sleep(0.2)
        assert writer.is_alive()                        # it waits for the lock...
        for _ in range(5):                              # ... and nothing else does
            before = time.monotonic()
            card = client.connection(timeout=5)
            card.request("GET", "/.well-known/agent-card.json")
            assert card.getresponse().status == 200
            card.close()
            assert client.result("GetTask", {"id": task_id})["id"] == task_id
            assert time.monotonic() - before < 0.5
        assert time.monotonic() - started < 1.5 and writer.is_alive()
        other.execute("COMMIT")
        writer.join(10)
        assert box["answer"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        client.close()


@pytest.mark.parametrize("host", ["asyncio", "asgi"])
def test_on_an_event_loop_what_needs_no_write_is_answered_on_the_loop(tmp_path, host):
    """On an event loop over a shared store, reads and a SendMessage of a
    new task to an ``async def`` agent are answered on the loop itself (the
    task committed there, on a connection that never waits): no store
    thread is made. A request that must write (a message continuing a
    task, CancelTask) is handed to a store thread, and answers the same."""
    async def agent(ctx):
        if ctx.text == "wait":
            return a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more")
        return "done: " + ctx.text
    # (store_poll: the watch thread's upkeep, which holds the store's writers off
    # for a moment and so may send a commit to a thread, stays out of the way.)
    server = a2a_min.Server(agent, store=a2a_store.SQLiteStore(str(tmp_path / "tasks.db"),
                                                               store_poll=3600))
    if host == "asgi":
        need("uvicorn", "ASGI host: needs uvicorn (the test extra)")
    client = (AsgiHostClient if host == "asgi" else AsyncioHostClient)(server)
    try:
        tasks = [client.send(f"hello {i}")["task"] for i in range(20)]
        assert {t["status"]["state"] for t in tasks} == {"TASK_STATE_COMPLETED"}
        assert client.result("GetTask", {"id": tasks[0]["id"]})["artifacts"][0]["parts"] == [
            {"text": "done: hello 0"}]
        assert len(client.result("ListTasks", {})["tasks"]) == 20
        assert server.live.off_loop.pool is None                # no store thread was needed
        waiting = client.send("wait")["task"]
        assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        more = user_message("more")
        more["taskId"] = waiting["id"]
        continued = client.result("SendMessage", {"message": more})["task"]
        assert continued["status"]["state"] == "TASK_STATE_COMPLETED"
        assert server.live.off_loop.pool is not None            # that one wrote on a store thread
        assert client.error("CancelTask", {"id": continued["id"]})["code"] == -32002
    finally:
        client.close()


def test_an_online_backup_holds_every_task(tmp_path):
    """The README's backup, taken while the server writes: the copy opens as a
    store with every task the server had answered for."""
    path, copy = str(tmp_path / "tasks.db"), str(tmp_path / "backup.db")
    server = a2a_min.Server(scenario_agent, store=a2a_store.SQLiteStore(path))
    client = Client(server)
    ids = [client.send(f"task {i}")["task"]["id"] for i in range(20)]
    stop = threading.Event()

    def keep_writing():
        while not stop.is_set():
            client.send("more")
    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        source, target = sqlite3.connect(path), sqlite3.connect(copy)
        source.backup(target)
        source.close()
        target.close()
    finally:
        stop.set()
        writer.join(10)
    restored = a2a_store.SQLiteStore(copy)
    owner = ("", None)
    for task_id in ids:
        task = restored.get(task_id, owner)
        assert task is not None and task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_the_file_stops_growing_under_steady_load(tmp_path):
    """Finished tasks are evicted past max_tasks (in batches), and SQLite
    reuses the pages they leave: after the first rounds the file (and its
    write-ahead log) stays the size it reached."""
    path = str(tmp_path / "tasks.db")
    store = a2a_store.SQLiteStore(path, max_tasks=200)
    server = a2a_min.Server(scenario_agent, store=store)
    client = Client(server)

    def size():
        return sum(os.path.getsize(path + end) for end in ("", "-wal")
                   if os.path.exists(path + end))
    sizes = []
    for round_ in range(6):
        for i in range(400):
            client.send(f"round {round_} task {i} " + "x" * 200)
        sizes.append(size())
    assert store.stats()["tasks"] <= 200
    assert sizes[-1] <= sizes[1] * 1.25, sizes


def test_a_restart_on_the_same_file_finds_every_task_and_resumes_its_stream(tmp_path):
    """A server made again on the file (as after a restart) answers for the
    tasks of the one before: their history, artifacts, push configs, and
    their events for a client resuming with Last-Event-ID."""
    path = str(tmp_path / "tasks.db")
    options = {"push_notifications": True, "push_allow": ["127.0.0.0/8"]}
    first = Client(a2a_min.Server(scenario_agent, store=a2a_store.SQLiteStore(path), **options))
    done = first.send("hello")["task"]
    events = first.stream("SendStreamingMessage", {"message": user_message("wait")})
    waiting = events[0][1]["result"]["task"]["id"]
    first.result("CreateTaskPushNotificationConfig",
                 {"taskId": waiting, "url": "http://127.0.0.1:9/hook", "id": "hook"})
    second = Client(a2a_min.Server(scenario_agent, store=a2a_store.SQLiteStore(path), **options))
    assert second.result("GetTask", {"id": done["id"]}) == done
    config = second.result("GetTaskPushNotificationConfig", {"taskId": waiting, "id": "hook"})
    assert config["url"] == "http://127.0.0.1:9/hook"
    box = {}
    watcher = threading.Thread(target=lambda: box.update(out=second.stream(
        "SubscribeToTask", {"id": waiting}, headers={**V1, "last-event-id": "0"})))
    watcher.start()
    time.sleep(0.2)
    second.result("CancelTask", {"id": waiting})
    watcher.join(10)
    ids = [seq for seq, _ in box["out"]]
    assert ids == [seq for seq, _ in events[1:]] + [events[-1][0] + 1]
    assert json.dumps(box["out"][-1][1]).count("TASK_STATE_CANCELED") == 1


def test_an_agent_whose_task_was_canceled_elsewhere_ends_quietly(tmp_path, caplog):
    """CancelTask through another Server on the file (as another process
    would) before this one's watch has noticed: the agent's next output meets
    a CANCELED task in the store, and the turn ends as canceled, without an
    error logged or an error event, whatever blocking call waits for it."""
    import logging
    path = str(tmp_path / "tasks.db")
    went_on = threading.Event()

    def agent(ctx):
        yield a2a_min.status_update("TASK_STATE_WORKING")
        went_on.wait(5)
        yield "after the cancel"
        yield "and more"
    here = a2a_min.Server(agent, store=a2a_store.SQLiteStore(path, store_poll=30))
    there = a2a_min.Server(agent, store=a2a_store.SQLiteStore(path, store_poll=30))
    task = Client(here).send("go", configuration={"returnImmediately": True})["task"]
    deadline = time.monotonic() + 5
    while Client(there).result("GetTask", {"id": task["id"]})["status"]["state"] != \
            "TASK_STATE_WORKING":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    with caplog.at_level(logging.ERROR, logger="a2a_min"):
        assert Client(there).result("CancelTask", {"id": task["id"]})["status"]["state"] == \
            "TASK_STATE_CANCELED"
        went_on.set()
        deadline = time.monotonic() + 5
        while here.live.channels.get(task["id"]) is not None:     # the turn ends, and lets go
            assert time.monotonic() < deadline
            time.sleep(0.01)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    got = Client(here).result("GetTask", {"id": task["id"]})
    assert got["status"]["state"] == "TASK_STATE_CANCELED" and "artifacts" not in got


def test_a_push_config_id_is_bounded(tmp_path):
    server = a2a_min.Server(scenario_agent, store=a2a_store.SQLiteStore(str(tmp_path / "t.db")),
                            push_notifications=True, push_allow=["127.0.0.0/8"])
    client = Client(server)
    task = client.send("wait")["task"]
    error = client.error("CreateTaskPushNotificationConfig", {
        "taskId": task["id"], "url": "http://127.0.0.1:9/h", "id": "x" * 300})
    assert error["code"] == -32602 and "id is longer" in error["message"]


def test_a_shared_stores_options_are_its_own_and_the_server_says_so(tmp_path):
    """lease_ttl, store_poll and store_threads matter only to a store that
    processes share: they are its constructor's, and a Server given one
    names where it goes."""
    with pytest.raises(TypeError, match=r"unknown Server options: store_poll; .*"
                                        r"SQLiteStore\(path, store_poll=\.\.\.\)"):
        a2a_min.Server(lambda ctx: "ok", store_poll=0.5)
    store = a2a_store.SQLiteStore(str(tmp_path / "tasks.db"), lease_ttl=5.0, store_poll=0.5,
                                  store_threads=2)
    assert (store.lease_ttl, store.store_poll, store.store_threads) == (5.0, 0.5, 2)
    assert not {"lease_ttl", "store_poll", "store_threads"} & set(a2a_min.DEFAULT_LIMITS)
