"""The eleven operations on every binding and host: each test that takes
``client`` runs once per entry of harness.BINDINGS (JSON-RPC and HTTP+JSON in
process; gRPC; the threaded and asyncio servers, over TLS too; WSGI, ASGI and
Lambda). It needs a2a_min.py alone (CI runs it so, in a folder without the
companions), and gRPC's tests the a2a_grpc companion."""

import asyncio
import json
import threading
import time

import pytest

import a2a_min
from harness import (JSONRPC_CLIENTS, Client, GrpcClient, RestClient, V1, scenario_agent,
                     user_message)


# -- SendMessage ---------------------------------------------------------------

def test_send_message_blocks_until_the_task_completes(client):
    task = client.send("hi")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "echo: hi"}]
    assert task["history"][0]["parts"] == [{"text": "hi"}]
    assert task["history"][0]["taskId"] == task["id"]
    assert task["history"][0]["contextId"] == task["contextId"]
    assert task["status"]["timestamp"].endswith("Z")


def test_plain_function_agent_returning_a_string(make_client):
    client = make_client(a2a_min.Server(lambda text: text.upper()))
    task = client.send("shout")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "SHOUT"}]


def test_async_function_and_async_generator_agents(make_client):
    async def coroutine(ctx):
        await asyncio.sleep(0)
        return "async " + ctx

    async def agen(ctx):
        yield a2a_min.status_update("TASK_STATE_WORKING")
        await asyncio.sleep(0)
        yield a2a_min.artifact_update("async gen")

    for agent, text in ((coroutine, "async x"), (agen, "async gen")):
        task = make_client(a2a_min.Server(agent)).send("x")["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"][0]["text"] == text


def test_request_context_carries_the_request(make_client):
    seen = {}

    def agent(ctx):
        seen.update(text=str(ctx), message=ctx.message, task_id=ctx.task_id,
                    context_id=ctx.context_id, extensions=ctx.extensions,
                    metadata=ctx.metadata, headers=ctx.caller.headers)
        return "ok"

    client = make_client(a2a_min.Server(agent))
    headers = {**V1, "a2a-extensions": "urn:x, urn:y"}
    task = client.result("SendMessage", {"message": user_message("a b"), "metadata": {"k": 1}},
                         headers=headers)["task"]
    assert seen["text"] == "a b"
    assert seen["task_id"] == task["id"] and seen["context_id"] == task["contextId"]
    assert seen["extensions"] == ("urn:x", "urn:y")
    assert seen["metadata"] == {"k": 1}
    assert seen["headers"]["a2a-extensions"] == "urn:x, urn:y"


def test_direct_message_reply_creates_no_task(client):
    result = client.send("direct")
    assert "task" not in result
    assert result["message"]["role"] == "ROLE_AGENT"
    assert result["message"]["parts"] == [{"text": "a direct reply"}]
    assert client.result("ListTasks")["totalSize"] == 0


def test_return_immediately_answers_before_the_agent_finishes(client):
    started = time.monotonic()
    task = client.send("slow", configuration={"returnImmediately": True})["task"]
    assert time.monotonic() - started < 1
    assert task["status"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    client.result("CancelTask", {"id": task["id"]})


def test_blocking_send_returns_at_the_deadline_and_the_task_goes_on(make_client):
    server = a2a_min.Server(scenario_agent, blocking_timeout=0.2)
    client = make_client(server)
    started = time.monotonic()
    task = client.send("ticks")["task"]
    assert time.monotonic() - started < 0.5
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    for _ in range(50):
        time.sleep(0.05)
        if client.result("GetTask", {"id": task["id"]})["status"]["state"] == "TASK_STATE_COMPLETED":
            break
    assert client.result("GetTask", {"id": task["id"]})["status"]["state"] == "TASK_STATE_COMPLETED"


def test_agent_exception_fails_the_task_without_leaking_details(client):
    task = client.send("boom")["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    text = task["status"]["message"]["parts"][0]["text"]
    assert "ValueError" in text and "secret" not in text


def test_agent_a2a_error_before_any_output_fails_the_request(client):
    error = client.error("SendMessage", {"message": user_message("refuse")})
    assert error["code"] == -32004 and error["message"] == "this agent refuses that"


def test_multi_turn_conversation_keeps_task_and_context(client):
    first = client.send("wait")["task"]
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert first["status"]["message"]["parts"] == [{"text": "say more"}]
    second = client.send("more", **{})  # a new task in a new context
    assert second["task"]["contextId"] != first["contextId"]
    follow = client.result("SendMessage", {"message": user_message("more", taskId=first["id"])})
    task = follow["task"]
    assert task["id"] == first["id"] and task["contextId"] == first["contextId"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    texts = [m["parts"][0]["text"] for m in task["history"]]
    assert texts == ["wait", "say more", "more"]


def test_message_to_an_unknown_task_is_task_not_found(client):
    error = client.error("SendMessage", {"message": user_message("x", taskId="nope")})
    assert error["code"] == -32001
    assert error["data"][0]["reason"] == "TASK_NOT_FOUND"
    assert error["data"][0]["metadata"] == {"taskId": "nope"}


def test_contradicting_context_id_is_rejected(client):
    task = client.send("wait")["task"]
    error = client.error("SendMessage", {"message": user_message(
        "x", taskId=task["id"], contextId="other")})
    assert error["code"] == -32602
    assert "contextId" in error["message"]


def test_terminal_task_refuses_new_messages(client):
    task = client.send("done")["task"]
    error = client.error("SendMessage", {"message": user_message("x", taskId=task["id"])})
    assert error["code"] == -32004
    assert "without taskId" in error["message"]


def test_client_context_id_is_kept_and_new_one_generated(client):
    kept = client.result("SendMessage", {"message": user_message("x", contextId="ctx-1")})
    assert kept["task"]["contextId"] == "ctx-1"
    fresh = client.send("y")["task"]["contextId"]
    assert fresh and fresh != "ctx-1"


def test_history_length_on_send(client):
    task = client.send("x", configuration={"historyLength": 0})["task"]
    assert "history" not in task
    error = client.error("SendMessage", {"message": user_message("x"),
                                         "configuration": {"historyLength": -1}})
    assert error["code"] == -32602


# -- GetTask -------------------------------------------------------------------

def test_get_task_and_history_length(client):
    first = client.send("wait")["task"]
    client.result("SendMessage", {"message": user_message("more", taskId=first["id"])})
    full = client.result("GetTask", {"id": first["id"]})
    assert len(full["history"]) == 3
    assert "history" not in client.result("GetTask", {"id": first["id"], "historyLength": 0})
    last = client.result("GetTask", {"id": first["id"], "historyLength": 1})["history"]
    assert [m["parts"][0]["text"] for m in last] == ["more"]
    assert client.error("GetTask", {"id": first["id"], "historyLength": -1})["code"] == -32602
    assert client.error("GetTask", {"id": "missing"})["code"] == -32001
    if type(client) in JSONRPC_CLIENTS:                        # over REST, /tasks/ lists
        assert client.error("GetTask", {})["code"] == -32602


# -- ListTasks -----------------------------------------------------------------

def test_list_tasks_newest_first_with_paging(client):
    ids = []
    for i in range(7):
        ids.append(client.send(f"t{i}")["task"]["id"])
        time.sleep(0.002)                     # distinct millisecond timestamps
    seen, token = [], None
    while True:
        params = {"pageSize": 3, **({"pageToken": token} if token else {})}
        page = client.result("ListTasks", params)
        assert page["pageSize"] == 3 and page["totalSize"] == 7
        seen += [t["id"] for t in page["tasks"]]
        token = page["nextPageToken"]
        if not token:
            break
    assert seen == ids[::-1]
    assert client.result("ListTasks")["pageSize"] == 50


def test_list_tasks_filters_and_artifacts(client):
    done = client.send("x", **{})["task"]
    waiting = client.send("wait")["task"]
    in_context = client.result("SendMessage", {"message": user_message("y", contextId="c9")})
    by_status = client.result("ListTasks", {"status": "TASK_STATE_INPUT_REQUIRED"})
    assert [t["id"] for t in by_status["tasks"]] == [waiting["id"]]
    by_number = client.result("ListTasks", {"status": 6})   # enums may come as numbers
    assert by_number["totalSize"] == 1
    by_context = client.result("ListTasks", {"contextId": "c9"})
    assert [t["id"] for t in by_context["tasks"]] == [in_context["task"]["id"]]
    everything = client.result("ListTasks")
    assert all("artifacts" not in t for t in everything["tasks"])
    with_artifacts = client.result("ListTasks", {"includeArtifacts": True})
    assert any("artifacts" in t for t in with_artifacts["tasks"])
    later = client.result("ListTasks", {"statusTimestampAfter": "2999-01-01T00:00:00Z"})
    assert later == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}
    since = client.result("ListTasks", {"statusTimestampAfter": done["status"]["timestamp"]})
    assert done["id"] in [t["id"] for t in since["tasks"]]
    assert "history" not in client.result("ListTasks", {"historyLength": 0})["tasks"][0]


@pytest.mark.parametrize("params, field", [
    ({"pageSize": 0}, "pageSize"), ({"pageSize": 101}, "pageSize"),
    ({"pageToken": "garbage!"}, "pageToken"), ({"status": "DONE"}, "status"),
    ({"statusTimestampAfter": "yesterday"}, "statusTimestampAfter"),
    ({"historyLength": -2}, "historyLength")])
def test_list_tasks_rejects_bad_params(client, params, field):
    error = client.error("ListTasks", params)
    assert error["code"] == -32602
    assert field in error["message"]


# -- CancelTask ----------------------------------------------------------------

def test_cancel_reaches_the_running_agent(client):
    task = client.send("slow", configuration={"returnImmediately": True})["task"]
    canceled = client.result("CancelTask", {"id": task["id"]})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    time.sleep(0.1)                          # the agent wakes and its output is dropped
    after = client.result("GetTask", {"id": task["id"]})
    assert after["status"]["state"] == "TASK_STATE_CANCELED"
    assert "artifacts" not in after


def test_cancel_waiting_task_and_errors(client):
    task = client.send("wait")["task"]
    assert client.result("CancelTask", {"id": task["id"]})["status"]["state"] == "TASK_STATE_CANCELED"
    again = client.error("CancelTask", {"id": task["id"]})
    assert again["code"] == -32002 and again["data"][0]["reason"] == "TASK_NOT_CANCELABLE"
    assert client.error("CancelTask", {"id": "missing"})["code"] == -32001


# -- SendStreamingMessage and SubscribeToTask ------------------------------------

def results(events):
    return [payload["result"] for _, payload in events]


def test_stream_events_in_order_and_closed_at_the_end(client):
    events = client.stream("SendStreamingMessage", {"message": user_message("chunks")})
    out = results(events)
    assert "task" in out[0] and out[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert out[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    chunks = [o["artifactUpdate"] for o in out if "artifactUpdate" in o]
    # Each chunk as it was made; the last says lastChunk, or, if it went out before the
    # agent ended (a shared store writes each at once), an empty chunk after it does.
    texts = [c["artifact"]["parts"][0]["text"] for c in chunks]
    assert texts[:3] == ["one ", "two ", "three"] and texts[3:] in ([], [""]), texts
    assert [c.get("append", False) for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.get("lastChunk", False) for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert out[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    if not isinstance(client, GrpcClient):                       # gRPC has no event ids
        assert [i for i, _ in events] == list(range(len(events)))   # SSE ids count up
    task = client.result("GetTask", {"id": out[0]["task"]["id"]})
    assert task["artifacts"][0]["parts"] == [{"text": "one "}, {"text": "two "}, {"text": "three"}]


def test_stream_with_direct_message_is_one_event(client):
    out = results(client.stream("SendStreamingMessage", {"message": user_message("direct")}))
    assert len(out) == 1 and out[0]["message"]["parts"] == [{"text": "a direct reply"}]


def test_stream_closes_when_input_is_required(client):
    out = results(client.stream("SendStreamingMessage", {"message": user_message("wait")}))
    assert out[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


def test_stream_error_before_start_is_a_plain_answer(client):
    answer = client.stream("SendStreamingMessage", {"message": user_message("x", taskId="nope")})
    assert answer["error"]["code"] == -32001


def test_agent_refusal_in_a_stream_is_an_error_event(client):
    events = client.stream("SendStreamingMessage", {"message": user_message("refuse")})
    error = events["error"] if isinstance(events, dict) else events[-1][1]["error"]
    assert error["code"] == -32004


def test_many_subscribers_see_the_same_events(client):
    task = client.send("slow0.3", configuration={"returnImmediately": True})["task"]
    seen = [None] * 5

    def watch(i):
        seen[i] = results(client.stream("SubscribeToTask", {"id": task["id"]}))

    threads = [threading.Thread(target=watch, args=(i,)) for i in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    for out in seen:
        assert "task" in out[0]
        assert out[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert out[1:] == seen[0][1:] or len(out) <= len(seen[0])


def test_subscribe_to_waiting_task_follows_it_to_the_end(client):
    task = client.send("wait")["task"]
    box = {}
    watcher = threading.Thread(target=lambda: box.update(
        out=results(client.stream("SubscribeToTask", {"id": task["id"]}))))
    watcher.start()
    time.sleep(0.1)
    client.result("SendMessage", {"message": user_message("more", taskId=task["id"])})
    watcher.join(5)
    out = box["out"]
    assert out[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert out[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def followed(server, task_id, within=5):
    """Wait until a SubscribeToTask stream follows the task (is counted on its channel)."""
    deadline = time.monotonic() + within
    while True:
        channel = server.live.channels.get(task_id)
        if channel is not None and channel.followers:
            return
        assert time.monotonic() < deadline, "no subscriber joined"
        time.sleep(0.01)


def test_a_continued_turn_is_one_stream_for_subscriber_and_sender(client):
    """A subscriber of a waiting task sees one Task (the first event) and then
    updates only, when another client continues the task: the message takes
    the task on to WORKING, never back to SUBMITTED, and the subscriber hears
    of it as a status update (sections 3.1.2, 3.1.6). The sender's stream
    begins with the Task as its message left it; from there both streams carry
    the same events in the same order, with the same ids (section 3.5.2)."""
    task = client.send("wait")["task"]
    box = {}
    watcher = threading.Thread(target=lambda: box.update(
        sub=client.stream("SubscribeToTask", {"id": task["id"]})))
    watcher.start()
    followed(client.server, task["id"])
    sent = client.stream("SendStreamingMessage", {"message": user_message(
        "chunks", taskId=task["id"], contextId=task["contextId"])})
    watcher.join(10)
    sub = box["sub"]
    sub_out, sent_out = results(sub), results(sent)
    # The subscriber: one Task first, then updates to the end.
    assert [i for i, o in enumerate(sub_out) if "task" in o] == [0], sub_out
    assert sub_out[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert sub_out[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert sub_out[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    # The sender: one Task first, WORKING with the message in its history.
    assert [i for i, o in enumerate(sent_out) if "task" in o] == [0], sent_out
    first = sent_out[0]["task"]
    assert first["status"]["state"] == "TASK_STATE_WORKING"
    assert first["history"][-1]["parts"] == [{"text": "chunks"}]
    # Never SUBMITTED again, on either stream or in the stored task.
    for out in (sub_out, sent_out):
        assert "TASK_STATE_SUBMITTED" not in [o["statusUpdate"]["status"]["state"]
                                              for o in out if "statusUpdate" in o]
    # The same events from the sender's joining on.
    assert sub_out[2:] == sent_out[1:]
    if not isinstance(client, GrpcClient):                       # gRPC has no event ids
        assert [i for i, _ in sub][1:] == [i for i, _ in sent]
        assert [i for i, _ in sub] == list(range(sub[0][0], sub[0][0] + len(sub)))
    got = client.result("GetTask", {"id": task["id"]})
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [m["parts"] for m in got["history"] if m["role"] == "ROLE_USER"] == [
        [{"text": "wait"}], [{"text": "chunks"}]]


def test_a_blocking_continuation_answers_the_task_and_never_submitted(client):
    """SendMessage on a waiting task: the task it answers, and each event a
    subscriber saw of it, go INPUT_REQUIRED -> WORKING -> COMPLETED."""
    task = client.send("wait")["task"]
    box = {}
    watcher = threading.Thread(target=lambda: box.update(
        sub=results(client.stream("SubscribeToTask", {"id": task["id"]}))))
    watcher.start()
    followed(client.server, task["id"])
    done = client.result("SendMessage", {"message": user_message("more", taskId=task["id"])})
    watcher.join(10)
    assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    told = [(o.get("task") or o.get("statusUpdate") or {}).get("status", {}).get("state")
            for o in box["sub"]]
    assert told[:2] == ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING"], told
    assert told[-1] == "TASK_STATE_COMPLETED" and "TASK_STATE_SUBMITTED" not in told, told
    assert [i for i, o in enumerate(box["sub"]) if "task" in o] == [0]


def test_subscribe_errors(client):
    done = client.send("x")["task"]
    assert client.stream("SubscribeToTask", {"id": done["id"]})["error"]["code"] == -32004
    assert client.stream("SubscribeToTask", {"id": "nope"})["error"]["code"] == -32001


def resume_from_0_then_cancel(client, task_id):
    """SubscribeToTask with Last-Event-ID 0, while the task is canceled: its events."""
    box = {}
    watcher = threading.Thread(target=lambda: box.update(out=client.stream(
        "SubscribeToTask", {"id": task_id}, headers={**V1, "last-event-id": "0"})))
    watcher.start()
    time.sleep(0.1)
    client.result("CancelTask", {"id": task_id})
    watcher.join(5)
    return box["out"]


def test_last_event_id_replays_what_was_missed(client):
    task_id = client.send("slow5", configuration={"returnImmediately": True})["task"]["id"]
    deadline = time.monotonic() + 5
    while client.result("GetTask", {"id": task_id})["status"]["state"] != "TASK_STATE_WORKING":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    out = resume_from_0_then_cancel(client, task_id)
    first = out[0][1]["result"]
    assert "task" not in first              # resumes right after event 0, no snapshot
    assert first["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    if not isinstance(client, GrpcClient):
        assert out[0][0] == 1
    assert out[-1][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


def test_a_waiting_task_keeps_no_live_copy_and_resumes_where_it_was(client):
    """A task waiting for input with nobody following it keeps no live channel,
    but the store keeps its events: a client resuming its stream from event 0
    gets what followed it, then what follows, with event ids that go on from
    where they were."""
    events = client.stream("SendStreamingMessage", {"message": user_message("wait")})
    task_id = events[0][1]["result"]["task"]["id"]
    out = resume_from_0_then_cancel(client, task_id)
    kinds = [next(iter(e[1]["result"])) for e in out]
    assert kinds == [next(iter(e[1]["result"])) for e in events[1:]] + ["statusUpdate"]
    assert out[-2][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert out[-1][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    if not isinstance(client, GrpcClient):
        assert [e[0] for e in out] == [e[0] for e in events[1:]] + [events[-1][0] + 1]


def test_keepalive_comments_while_idle():
    """(JSON-RPC only: it reads the raw SSE bytes.)"""
    server = a2a_min.Server(scenario_agent, keepalive_interval=0.05)
    client = Client(server)
    task = client.send("slow0.3", configuration={"returnImmediately": True})["task"]
    resp = client.raw({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                       "params": {"id": task["id"]}})
    data = b"".join(resp.stream)
    assert b": keep-alive\n" in data
    assert b": keep-alive\n\n" not in data       # (no empty event: a2a-sdk 0.3's resubscribe)
    assert b"TASK_STATE_COMPLETED" in data


def test_streaming_off_means_unsupported_operation(make_client):
    client = make_client(a2a_min.Server(lambda t: "x", streaming=False))
    assert client.stream("SendStreamingMessage", {"message": user_message("x")})["error"]["code"] == -32004
    assert client.stream("SubscribeToTask", {"id": "x"})["error"]["code"] == -32004
    card = json.loads(client.server.handle_http("GET", "/.well-known/agent-card.json").body)
    assert card["capabilities"]["streaming"] is False


# -- push configs and the extended card ------------------------------------------

@pytest.mark.parametrize("method, params", [
    ("CreateTaskPushNotificationConfig", {"taskId": "t", "url": "https://example.com/h"}),
    ("GetTaskPushNotificationConfig", {"taskId": "t", "id": "c"}),
    ("ListTaskPushNotificationConfigs", {"taskId": "t"}),
    ("DeleteTaskPushNotificationConfig", {"taskId": "t", "id": "c"})])
def test_push_operations_say_not_supported(client, method, params):
    error = client.error(method, params)
    assert error["code"] == -32003
    assert error["data"][0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED"


SOME_USER = a2a_min.BearerAuth({"t0ken": "u"}, anonymous=True)   # anonymous callers welcome
WITH_TOKEN = {**V1, "authorization": "Bearer t0ken"}


def test_extended_card(client, make_client):
    assert client.error("GetExtendedAgentCard")["code"] == -32004
    rich = make_client(a2a_min.Server(lambda t: "x", extended_card={"description": "more"},
                                      authenticate=SOME_USER))
    assert rich.result("GetExtendedAgentCard", headers=WITH_TOKEN)["description"] == "more"
    assert rich.error("GetExtendedAgentCard")["code"] == -31401      # (section 13.3)
    assert rich.result("SendMessage", {"message": user_message("hi")})["task"]   # the rest: open
    empty = make_client(a2a_min.Server(lambda t: "x", extended_card={}, authenticate=SOME_USER))
    assert empty.error("GetExtendedAgentCard", headers=WITH_TOKEN)["code"] == -32007


def test_an_extended_card_without_authentication_is_refused_at_start():
    with pytest.raises(ValueError, match="authenticate=.*anonymous=True"):
        a2a_min.Server(lambda t: "x", extended_card={"description": "more"})


# -- versions and extensions ------------------------------------------------------

def test_missing_version_is_refused_with_the_fix(client):
    error = client.error("GetTask", {"id": "x"}, headers={"content-type": "application/json"})
    assert error["code"] == -32009
    assert "-H 'A2A-Version: 1.0'" in error["message"]


def test_version_from_query_and_patch_numbers(client):
    plain = {"content-type": "application/json"}
    # The query's version counts (section 3.6.1) on a JSON POST too: a page of another site
    # cannot send one without a preflight (a2a_min.py, "Who may call"). (gRPC has no query.)
    assert client.error("GetTask", {"id": "x"}, headers=plain, query="A2A-Version=1.0")[
        "code"] == -32001
    assert client.error("GetTask", {"id": "x"}, headers={**plain, "a2a-version": "1.0.3"})["code"] == -32001
    wrong = client.error("GetTask", {"id": "x"}, headers={**plain, "a2a-version": "99.0"})
    assert wrong["code"] == -32009 and wrong["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    assert client.error("GetTask", {"id": "x"}, headers={**plain, "a2a-version": "0.3"})["code"] == -32009


def test_assume_version_option(make_client):
    client = make_client(a2a_min.Server(lambda t: "x", assume_version="1.0"))
    assert client.error("GetTask", {"id": "x"}, headers={"content-type": "application/json"})["code"] == -32001


def test_required_extension(make_client):
    server = a2a_min.Server(lambda t: "x", required_extensions=["urn:must"])
    c = make_client(server)
    error = c.error("SendMessage", {"message": user_message("x")})
    assert error["code"] == -32008 and "A2A-Extensions: urn:must" in error["message"]
    ok = c.result("SendMessage", {"message": user_message("x")},
                  headers={**V1, "a2a-extensions": "urn:other, urn:must"})
    assert ok["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
    declared = [e for e in card["capabilities"]["extensions"]      # (Lambda adds its own)
                if e["uri"] not in (a2a_min.BUFFERED_STREAMS, a2a_min.IDEMPOTENT_SEND)]
    assert declared == [{"uri": "urn:must", "required": True}]


# -- concurrency -----------------------------------------------------------------

def test_concurrent_sends_lose_no_task(client):
    ids, lock = [], threading.Lock()

    def worker():
        for _ in range(50):
            task = client.send("x")["task"]
            with lock:
                ids.append(task["id"])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 400
    listed = set()
    token = ""
    while True:
        page = client.result("ListTasks", {"pageSize": 100, **({"pageToken": token} if token else {})})
        listed |= {t["id"] for t in page["tasks"]}
        token = page["nextPageToken"]
        if not token:
            break
    assert listed == set(ids)


def test_extended_card_shows_the_address_the_client_used(make_client):
    server = a2a_min.Server(lambda t: "x", extended_card={"description": "more"},
                            authenticate=SOME_USER)
    client = make_client(server)
    if type(client) in JSONRPC_CLIENTS:
        resp = server.handle_http("POST", "/", "", dict(WITH_TOKEN), json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard", "params": {}}).encode(),
            base_url="http://agents.example:9000")
        card = json.loads(resp.body)["result"]
    else:
        resp = server.handle_http("GET", "/extendedAgentCard", "", dict(WITH_TOKEN), b"",
                                  base_url="http://agents.example:9000")
        card = json.loads(resp.body)
    assert card["supportedInterfaces"][0]["url"] == "http://agents.example:9000/"
    assert card["description"] == "more"


def test_a_new_turn_keeps_the_channel_the_last_turn_lets_go_of():
    """A turn that ends waiting for input lets go of the task's channel, unless
    the client's next message has already begun a turn on it: then the
    channel stays (one channel per task, so CancelTask reaches the new turn)."""
    import threading
    release = threading.Event()

    def agent(ctx):
        if ctx.task is None:
            yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "more?")
            return
        release.wait(5)
        yield "done"
    server = a2a_min.Server(agent)
    first = server.call("SendMessage", {"message": user_message("hi")})["task"]
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert first["id"] not in server.live.channels           # waiting: let go
    reply = server.call("SendMessage", {"message": user_message("go", taskId=first["id"]),
                                        "configuration": {"returnImmediately": True}})
    channel = server.live.channels[first["id"]]
    assert channel.active is not None
    server.live.forget(first["id"], unless_followed=True)   # what a late _end_turn would do
    assert server.live.channels.get(first["id"]) is channel
    canceled = server.call("CancelTask", {"id": reply["task"]["id"]})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert channel.active is None or channel.active.cancelled.is_set()
    release.set()


def test_a_stream_with_no_replay_buffer_resynchronizes_with_the_task():
    """replay_buffer=0 keeps no event for a follower that falls behind: it
    gets the whole task instead, and the stream still ends where the task
    does (it used to fail with IndexError)."""
    def agent(ctx):
        yield "one "
        yield "two"
    server = a2a_min.Server(agent, replay_buffer=0)
    events = [event for _, event in server.call(
        "SendStreamingMessage", {"message": user_message("hi")}) if event is not None]
    assert events and "task" in events[0]
    last = events[-1]
    state = (last.get("task") or {}).get("status", {}).get("state") or \
        last.get("statusUpdate", {}).get("status", {}).get("state")
    assert state == "TASK_STATE_COMPLETED"
