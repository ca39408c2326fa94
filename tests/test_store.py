"""The task store (a2a_min.TaskStore, behind every Server) and its bounds: a
store full of running tasks refuses new ones, finished tasks are evicted first
(and a list's page token survives it), one caller cannot take the store from
the others (who a caller is: its address, a trusted forwarded one, or its
principal, whatever the tenant), memory is counted in bytes, history and list
pages are bounded, and a terminal task is never changed. Through handle_http
with the client's address given as ``peer``, on a TaskStore alone, or, for the
tests that take ``make_client``, over every binding and host."""

import json
import time

import pytest

import a2a_min
import a2a_store
from a2a_min import artifact_update, status_update
from harness import V1, Client, MemoryTaskStore, answer, rpc, scenario_agent, user_message


# -- a full store, and eviction --------------------------------------------------------

def test_store_full_of_running_tasks_refuses_new_ones(make_client):
    client = make_client(a2a_min.Server(scenario_agent, max_tasks=2))
    a = client.send("slow", configuration={"returnImmediately": True})["task"]
    b = client.send("slow", configuration={"returnImmediately": True})["task"]
    error = client.error("SendMessage", {"message": user_message("x")})
    assert error["data"][0]["reason"] == "TASK_STORE_FULL"
    for t in (a, b):
        client.result("CancelTask", {"id": t["id"]})
    assert client.send("x")["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_list_token_survives_eviction(make_client):
    server = a2a_min.Server(lambda t: "x", max_tasks=5)
    client = make_client(server)
    for i in range(5):
        client.send(f"{i}")
        time.sleep(0.002)
    page = client.result("ListTasks", {"pageSize": 2})
    for i in range(3):                       # evicts the three oldest
        client.send(f"new{i}")
    rest = client.result("ListTasks", {"pageSize": 2, "pageToken": page["nextPageToken"]})
    assert rest["totalSize"] == 5            # what is left, still in order


# -- one caller cannot take the store from the others -----------------------------------

def test_a_caller_over_its_share_gets_429_and_others_are_served():
    server = a2a_min.Server(scenario_agent, max_tasks_per_caller=3)
    def slow():                            # (a message of its own each: a messageId is one send)
        return {"message": user_message("slow5"), "configuration": {"returnImmediately": True}}
    ids = [answer(rpc(server, "SendMessage", slow(), peer="10.0.0.1"))["result"]["task"]["id"]
           for _ in range(3)]
    refused = rpc(server, "SendMessage", slow(), peer="10.0.0.1")
    assert refused.status == 429 and ("Retry-After", "5") in refused.headers
    error = answer(refused)["error"]
    assert error["code"] == a2a_min.TaskStoreFullError.code
    assert error["data"][0]["reason"] == "CALLER_LIMIT"
    assert error["data"][0]["metadata"] == {"limit": "max_tasks_per_caller", "value": "3"}
    rest = server.handle_http("POST", "/message:send", "", dict(V1),
                              json.dumps(slow()).encode(), peer="10.0.0.1")
    assert rest.status == 429 and ("Retry-After", "5") in rest.headers
    other = answer(rpc(server, "SendMessage", slow(), peer="10.0.0.2"))     # someone else
    assert other["result"]["task"]["status"]["state"] in ("TASK_STATE_SUBMITTED",
                                                          "TASK_STATE_WORKING")
    for task_id in ids:                                          # once they end, room again
        answer(rpc(server, "CancelTask", {"id": task_id}, peer="10.0.0.1"))
    done = answer(rpc(server, "SendMessage", {"message": user_message("x")}, peer="10.0.0.1"))
    assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_caller_over_its_share_loses_its_own_oldest_finished_tasks_first():
    server = a2a_min.Server(scenario_agent, max_tasks_per_caller=3)
    mine = [answer(rpc(server, "SendMessage", {"message": user_message(f"{i}")},
                       peer="10.0.0.1"))["result"]["task"]["id"] for i in range(5)]
    theirs = answer(rpc(server, "SendMessage", {"message": user_message("t")},
                        peer="10.0.0.2"))["result"]["task"]["id"]
    found = [("result" in answer(rpc(server, "GetTask", {"id": i}))) for i in mine + [theirs]]
    assert found == [False, False, True, True, True, True]


def test_forwarded_addresses_count_only_when_trusted():
    def slow():                            # (a message of its own each: a messageId is one send)
        return {"message": user_message("slow5"), "configuration": {"returnImmediately": True}}
    for trusted, statuses in ((False, [200, 429]), (True, [200, 200])):
        server = a2a_min.Server(scenario_agent, max_tasks_per_caller=1, trust_forwarded=trusted)
        got = [rpc(server, "SendMessage", slow(), peer="10.0.0.9", headers={
            **V1, "x-forwarded-for": f"1.2.3.4, 203.0.113.{i}"}).status for i in range(2)]
        assert got == statuses


def test_an_authenticated_principal_is_one_caller_from_any_address():
    auth = a2a_min.BearerAuth({"a": "alice", "b": "bob"})
    server = a2a_min.Server(scenario_agent, authenticate=auth, max_tasks_per_caller=1)
    def slow():                            # (a message of its own each: a messageId is one send)
        return {"message": user_message("slow5"), "configuration": {"returnImmediately": True}}
    alice = {**V1, "authorization": "Bearer a"}
    assert rpc(server, "SendMessage", slow(), peer="10.0.0.1", headers=alice).status == 200
    assert rpc(server, "SendMessage", slow(), peer="10.0.0.2", headers=alice).status == 429
    bob = {**V1, "authorization": "Bearer b"}
    assert rpc(server, "SendMessage", slow(), peer="10.0.0.1", headers=bob).status == 200


def test_tenants_in_the_path_do_not_multiply_an_anonymous_callers_share():
    server = a2a_min.Server(scenario_agent, max_tasks_per_caller=2)
    slow = json.dumps({"message": user_message("slow5"),
                       "configuration": {"returnImmediately": True}}).encode()
    got = [server.handle_http("POST", f"/t{i}/message:send", "", dict(V1), slow,
                              peer="10.0.0.1").status for i in range(4)]
    assert got == [200, 200, 429, 429]


# -- memory counted in bytes ----------------------------------------------------------

def test_the_store_is_bounded_in_bytes_evicting_finished_tasks_first():
    server = a2a_min.Server(lambda text: "ok", max_store_bytes=2_000_000,
                            max_bytes_per_caller=2_000_000)
    big = "x" * 200_000
    for i in range(30):
        answer(rpc(server, "SendMessage", {"message": user_message(big)}, peer=f"10.0.0.{i}"))
    stats = server.store.stats()
    assert stats["bytes"] <= 2_000_000 and 5 <= stats["tasks"] <= 10


def test_running_tasks_past_the_byte_budget_are_refused_503_naming_the_limit():
    server = a2a_min.Server(scenario_agent, max_store_bytes=1_000_000)
    # Each weighs 200-300 kB: its Task event and kept task, and in the memory
    # store its live copy too (an SQLiteStore's budget bounds the file, where
    # no live copy is).
    def slow():                            # (a message of its own each: a messageId is one send)
        return {"message": user_message("slow5" + " " * 100_000),
                "configuration": {"returnImmediately": True}}
    got = [rpc(server, "SendMessage", slow(), peer=f"10.0.0.{i}") for i in range(6)]
    refused = [i for i, g in enumerate(got) if "error" in answer(g)]
    assert refused and refused[0] in (3, 4) and refused == list(range(refused[0], 6))
    for i in refused:
        error = answer(got[i])["error"]
        assert got[i].status == 200 and error["data"][0]["reason"] == "TASK_STORE_FULL"
        assert error["data"][0]["metadata"]["limit"] == "max_store_bytes"
    for g in got[:refused[0]]:
        answer(rpc(server, "CancelTask", {"id": answer(g)["result"]["task"]["id"]}))


def test_max_history_caps_the_live_copy_too():
    def agent(ctx):
        yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "more?")
    server = a2a_min.Server(agent, max_history=10)
    client = Client(server)
    task = client.send("start")["task"]
    for i in range(40):
        resp = client.raw({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": user_message(f"turn {i}", taskId=task["id"])}})
        got = json.loads(resp.body)["result"]["task"]
        assert len(got["history"]) <= 10
    assert len(resp.body) < 10_000


def test_list_pages_are_bounded_in_bytes_and_continue():
    server = a2a_min.Server(lambda text: "ok", max_page_bytes=1_000_000)
    client = Client(server)
    ids = {client.send("y" * 300_000)["task"]["id"] for _ in range(8)}
    seen, token, pages = set(), "", 0
    while True:
        page = client.result("ListTasks", {"pageSize": 100, "pageToken": token})
        assert page["pageSize"] == 100 and page["totalSize"] == 8
        assert len(page["tasks"]) <= 3
        seen |= {t["id"] for t in page["tasks"]}
        pages += 1
        token = page["nextPageToken"]
        if not token:
            break
    assert seen == ids and pages >= 3


# -- a terminal state is final at the store ---------------------------------------

def test_the_store_refuses_to_change_a_terminal_task():
    store = a2a_min.TaskStore()
    task = {"id": "t", "status": {"state": "TASK_STATE_CANCELED"}}
    store.commit(task, "me", 0)
    with pytest.raises(a2a_min.UnsupportedOperationError):
        store.commit({**task, "status": {"state": "TASK_STATE_COMPLETED"}}, "me", 1)


def test_a_task_read_again_is_decoded_once_per_version():
    """The store's cache of recently read tasks (_recently_read): a second
    read of an unchanged task is the same decoded object; a new version, a
    removal or another owner never sees a stale one; the cache is bounded."""
    store = a2a_min.TaskStore()
    task = {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    store.commit(task, "alice", 0)
    first = store.get("t1", "alice")
    assert first == task and store.get("t1", "alice") is first
    assert json.loads(first.json) == task
    assert store.get("t1", "bob") is None
    changed = {**task, "status": {"state": "TASK_STATE_COMPLETED"}}
    store.commit(changed, "alice", 1)
    again = store.get("t1", "alice")
    assert again is not first and again == changed
    store.delete("t1")
    assert store.get("t1", "alice") is None and "t1" not in store._recent
    for i in range(a2a_min._RECENT + 50):
        store.commit({**task, "id": f"n{i}"}, "alice", 0)
        store.get(f"n{i}", "alice")
    assert len(store._recent) <= a2a_min._RECENT
    big = {**task, "id": "big", "metadata": {"x": "y" * a2a_min._RECENT_BYTES}}
    store.commit(big, "alice", 0)
    assert store.get("big", "alice") == big and "big" not in store._recent


# -- replay: the same bytes as the first time ---------------------------------------------

def _replay_agent(ctx):
    """A few events of all kinds (text that JSON must escape too), then a wait."""
    if ctx.task is not None and ctx.task.get("artifacts"):
        yield status_update("TASK_STATE_COMPLETED")
        return
    yield status_update("TASK_STATE_WORKING", "working on «it»")
    for i in range(3):
        yield artifact_update(f"chunk {i}: \"quoted\" é \u2028 " + "x" * 2000, artifact_id="a",
                              append=i > 0, last_chunk=i == 2)
    yield status_update("TASK_STATE_INPUT_REQUIRED", "more?")


@pytest.mark.parametrize("backend", ["memory", "sqlite", "postgres"])
@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
def test_a_resumed_stream_gets_the_frames_the_first_one_got_byte_for_byte(backend, binding,
                                                                          tmp_path):
    """SubscribeToTask with Last-Event-ID replays the kept events (kept as
    their JSON once the task waits) as the very frames the first stream sent."""
    if backend == "postgres":
        from conftest import postgres_store
        store = postgres_store()
    else:
        store = a2a_store.SQLiteStore(str(tmp_path / "t.db")) if backend == "sqlite" else None
    server = a2a_min.Server(_replay_agent, store=store)

    def frames(method, params, last_event_id=None, count=None):
        headers = dict(V1, **({"last-event-id": str(last_event_id)}
                              if last_event_id is not None else {}))
        if binding == "jsonrpc":
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
            response = server.handle_http("POST", "/", "", headers, body.encode())
        elif method == "SendStreamingMessage":
            response = server.handle_http("POST", "/message:stream", "", headers,
                                          json.dumps(params).encode())
        else:
            response = server.handle_http("GET", f"/tasks/{params['id']}:subscribe", "",
                                          headers, b"")
        assert response.status == 200 and response.stream is not None, response.body
        got = []
        for chunk in response.stream:          # (a chunk holds the frames ready together)
            got += [frame + b"\n\n" for frame in chunk.split(b"\n\n")[:-1]]
            if count is not None and len(got) >= count:
                del got[count:]
                break
        response.stream.close()
        return got

    first = frames("SendStreamingMessage", {"message": user_message("go")})
    assert len(first) == 6 and first[0].startswith(b"id: 0\n")
    assert b"TASK_STATE_INPUT_REQUIRED" in first[-1]
    task_id = json.loads(first[0].split(b"data: ", 1)[1])
    task_id = (task_id["result"] if binding == "jsonrpc" else task_id)["task"]["id"]
    for since in (0, 3):
        again = frames("SubscribeToTask", {"id": task_id}, last_event_id=since,
                       count=len(first) - 1 - since)
        assert again == first[since + 1:]


def test_an_idle_tasks_events_keep_their_dicts_for_a_few_writes_then_only_json():
    """When a task ends, the stream that follows it reads its events next:
    they stay parsed (not JSON to parse again) while _SETTLING more tasks end,
    then only their JSON is kept (parsed, an event may take 25 times its bytes);
    a large task's events at once. Either way they read back the same."""
    store = MemoryTaskStore()                  # (what it keeps is the in-memory store's own)
    client = Client(a2a_min.Server(lambda text: "echo: " + text, store=store))

    def streamed(text):
        frames = list(client.stream("SendStreamingMessage", {"message": user_message(text)}))
        return frames[0][1]["result"]["task"]["id"]

    def kinds(task_id):                        # what the store's log holds, per event
        return {type(event) for _, event in store._logs[task_id].events}
    first = streamed("first")
    assert kinds(first) == {a2a_min._StoredEvent}
    events = store.events(first)[1]
    for i in range(a2a_min._SETTLING):
        streamed(f"more {i}")
    assert kinds(first) == {bytes}
    assert store.events(first)[1] == events
    big = streamed("x" * a2a_min._SETTLING_BYTES)
    assert kinds(big) == {bytes}
