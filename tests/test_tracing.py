"""W3C Trace Context (Level 1): read strictly, never an error, and carried on
to the webhooks of the turn, to the agent's a2a_client calls (over HTTP and
gRPC), and into the access log; Server(tracing=False) does none of it."""

import asyncio
import json
import logging

import pytest

import a2a_client
import a2a_min
from harness import V1, AsyncioHostClient, Live, grpc_available, rpc, user_message
from test_push_auth import wait_for
from webhook_receiver import Receiver

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"


def traced(headers, tracing=True):
    """The turn's trace as the agent saw it, for a request with ``headers``."""
    seen = []

    def agent(ctx):
        seen.append(ctx.trace)
        return "ok"
    server = a2a_min.Server(agent, tracing=tracing)
    answer = rpc(server, "SendMessage", {"message": user_message("hi")},
                 headers={**V1, **headers})
    assert answer.status == 200, answer.body     # tracing never fails a request
    assert "error" not in json.loads(answer.body), answer.body
    return seen[0]


def test_the_agent_sees_the_callers_trace_and_a_span_of_its_own():
    trace = traced({"traceparent": TRACEPARENT, "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"})
    assert (trace.trace_id, trace.parent_id, trace.flags) == (TRACE, PARENT, 1)
    assert trace.tracestate == "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
    assert len(trace.span_id) == 16 and trace.span_id != PARENT
    assert int(trace.span_id, 16)
    assert trace.traceparent == f"00-{TRACE}-{trace.span_id}-01"
    assert trace.headers() == {"traceparent": trace.traceparent, "tracestate": trace.tracestate}


@pytest.mark.parametrize("value, why", [
    ("", "none"),
    (f"00-{TRACE.upper()}-{PARENT}-01", "upper-case hex"),
    (f"00-{'0' * 32}-{PARENT}-01", "a trace id of zeros"),
    (f"00-{TRACE}-{'0' * 16}-01", "a parent id of zeros"),
    (f"ff-{TRACE}-{PARENT}-01", "version ff"),
    (f"00-{TRACE}-{PARENT}-01-extra", "version 00 with a fifth field"),
    (f"01-{TRACE}-{PARENT}-01x", "a later version whose field 4 runs on"),
    (f"00-{TRACE[:-1]}-{PARENT}-01", "a short trace id"),
    (f"00_{TRACE}_{PARENT}_01", "no dashes"),
    (f"00-{TRACE}-{PARENT}-0g", "flags that are not hex"),
    (f"{TRACEPARENT}, {TRACEPARENT}", "two headers"),
])
def test_a_malformed_traceparent_begins_a_new_trace_and_fails_nothing(value, why):
    trace = traced({"traceparent": value, "tracestate": "rojo=1"})
    assert trace.parent_id is None, why
    assert trace.trace_id != TRACE and len(trace.trace_id) == 32 and int(trace.trace_id, 16)
    assert trace.tracestate == ""                # (a vendor's state is only read with its parent)


def test_a_later_version_is_read_as_far_as_version_00_goes():
    trace = traced({"traceparent": f"cc-{TRACE}-{PARENT}-03-what-comes-later"})
    assert (trace.trace_id, trace.parent_id) == (TRACE, PARENT)
    assert trace.flags == 1 and trace.traceparent.startswith("00-")   # (unknown flags: 0)


@pytest.mark.parametrize("state, kept", [
    ("a=1,,b=2 , c=3", "a=1,b=2,c=3"),
    ("tenant@system=v,k_-*/9=x y", "tenant@system=v,k_-*/9=x y"),
    ("a=1,a=2", ""),                              # a key twice
    ("A=1", ""),                                  # upper case
    ("a=x=y", ""),                                # "=" in a value
    ("a=1 ", "a=1"),                              # (trailing white space is the list's)
    ("a=\x01", ""),
    ("@s=1", ""),
    (",".join(f"k{i}=v" for i in range(33)), ""),  # more than 32 members
])
def test_tracestate_is_kept_by_its_rules_or_dropped_whole(state, kept):
    assert traced({"traceparent": TRACEPARENT, "tracestate": state}).tracestate == kept


def test_a_long_tracestate_loses_its_long_members_first_then_its_last():
    long = "big=" + "x" * 200
    members = [f"k{i}=" + "v" * 40 for i in range(12)]        # 12 of 44: 539 with commas
    state = traced({"traceparent": TRACEPARENT,
                    "tracestate": ",".join([members[0], long] + members[1:])}).tracestate
    assert long not in state and len(state) <= 512
    assert state.split(",") == members[:11]


def test_tracing_off_reads_nothing():
    assert traced({"traceparent": TRACEPARENT}, tracing=False) is None


def test_each_webhook_post_and_its_retries_carry_the_turns_span():
    receiver = Receiver()
    try:
        spans = []

        def agent(ctx):
            spans.append(ctx.trace.span_id)
            yield a2a_min.artifact_update("done")
        server = a2a_min.Server(agent, push_notifications=True, push_allow=["127.0.0.1/32"],
                                push_backoff=0.02)
        answer = rpc(server, "SendMessage", {"message": user_message("hi"), "configuration": {
            "taskPushNotificationConfig": {"url": receiver.url("/fail/1")}}},
            headers={**V1, "traceparent": TRACEPARENT, "tracestate": "rojo=1"})
        assert answer.status == 200
        assert wait_for(lambda: server.push_stats["delivered"] >= 3)
        got = receiver.wait(4)
        assert server.push_stats["retried"] == 1
        assert {r["headers"].get("traceparent") for r in got} == {f"00-{TRACE}-{spans[0]}-01"}
        assert {r["headers"].get("tracestate") for r in got} == {"rojo=1"}
        server.shutdown()
    finally:
        receiver.close()


def test_no_traceparent_goes_to_a_webhook_when_tracing_is_off():
    receiver = Receiver()
    try:
        server = a2a_min.Server(lambda ctx: "ok", push_notifications=True,
                                push_allow=["127.0.0.1/32"], tracing=False)
        rpc(server, "SendMessage", {"message": user_message("hi"), "configuration": {
            "taskPushNotificationConfig": {"url": receiver.url()}}},
            headers={**V1, "traceparent": TRACEPARENT})
        got = receiver.wait(2)
        assert got and all("traceparent" not in r["headers"] for r in got)
        server.shutdown()
    finally:
        receiver.close()


def _agent_b():
    """Agent B, on a real threaded server: it answers with the trace it saw."""
    def agent(ctx):
        trace = ctx.trace
        return json.dumps([trace.trace_id, trace.parent_id, trace.tracestate])
    return Live(a2a_min.Server(agent, name="B"), timeout=5)


def _answer_text(answer):
    return json.loads(answer["task"]["artifacts"][0]["parts"][0]["text"])


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_agent_a_calling_agent_b_is_one_trace(binding):
    """A's turn calls B with a2a_client, saying nothing of traces: B's turn
    is in the same trace, under A's turn's span (and over gRPC, in metadata)."""
    if binding == "GRPC" and not grpc_available():
        pytest.skip("grpcio is not installed")
    b = _agent_b()
    grpc_server = None
    try:
        card = json.loads(b.request("GET", "/.well-known/agent-card.json")[1])
        if binding == "GRPC":
            import a2a_grpc
            grpc_server, port = a2a_grpc.create_server(b.server, "127.0.0.1:0")
            grpc_server.start()
            card["supportedInterfaces"] = [{"url": f"127.0.0.1:{port}", "protocolBinding": "GRPC",
                                            "protocolVersion": "1.0"}]
        spans = []

        def agent_a(ctx):
            spans.append(ctx.trace.span_id)
            with a2a_client.Client(card, binding=binding, card_url=b.url) as client:
                return json.dumps(_answer_text(client.send("what trace?")))
        a = Live(a2a_min.Server(agent_a, name="A"), timeout=5)
        try:
            resp, data = a.request("POST", "/", {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                                 "params": {"message": user_message("go")}},
                                   {"A2A-Version": "1.0", "Content-Type": "application/json",
                                    "traceparent": TRACEPARENT, "tracestate": "rojo=1"})
            seen_by_b = _answer_text(json.loads(data)["result"])
            assert seen_by_b == [TRACE, spans[0], "rojo=1"]
        finally:
            a.close()
    finally:
        if grpc_server is not None:
            grpc_server.stop(0)
        b.close()


def test_an_async_agent_on_the_asyncio_server_passes_its_trace_on_too():
    b = _agent_b()
    try:
        card = json.loads(b.request("GET", "/.well-known/agent-card.json")[1])
        spans = []

        async def agent_a(ctx):
            spans.append(ctx.trace.span_id)
            await asyncio.sleep(0)

            def call():                         # (asyncio.to_thread carries the context)
                with a2a_client.Client(card, card_url=b.url) as client:
                    return _answer_text(client.send("what trace?"))
            return json.dumps(await asyncio.to_thread(call))
        host = AsyncioHostClient(a2a_min.Server(agent_a, name="A"))
        try:
            answer = host.raw(
                {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                 "params": {"message": user_message("go")}},
                headers={"A2A-Version": "1.0", "Content-Type": "application/json",
                         "traceparent": TRACEPARENT})
            assert _answer_text(json.loads(answer.body)["result"]) == [TRACE, spans[0], ""]
        finally:
            host.close()
    finally:
        b.close()


def test_a_client_outside_any_turn_sends_no_trace_unless_given_one():
    b = _agent_b()
    try:
        with a2a_client.Client(b.url) as client:
            trace_id, parent, _ = _answer_text(client.send("x"))
            assert parent is None and trace_id != TRACE     # B began a trace of its own
        given = a2a_min.TraceContext(TRACE, span_id=PARENT)
        with a2a_client.Client(b.url, trace=given) as client:
            assert _answer_text(client.send("x")) == [TRACE, PARENT, ""]
    finally:
        b.close()


def test_the_json_access_log_is_one_object_a_line_without_credentials(caplog):
    caplog.set_level(logging.INFO, logger="a2a_min.access")
    server = a2a_min.Server(lambda ctx: "ok", access_log="json",
                            authenticate=a2a_min.BearerAuth({"s3cret-token": "alice"}))
    live = Live(server, timeout=5)
    try:
        resp, data = live.request(
            "POST", "/", {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                          "params": {"message": user_message("hi")}},
            {"A2A-Version": "1.0", "Content-Type": "application/json",
             "Authorization": "Bearer s3cret-token", "traceparent": TRACEPARENT})
        task_id = json.loads(data)["result"]["task"]["id"]
        live.request("GET", f"/tasks/{task_id}?historyLength=1",
                     headers={"A2A-Version": "1.0", "Authorization": "Bearer s3cret-token"})
        live.request("POST", f"/tasks/{task_id}:subscribe",   # (refused: the task has ended)
                     headers={"A2A-Version": "1.0", "Authorization": "Bearer s3cret-token"})
    finally:
        live.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "a2a_min.access"]
    assert len(lines) == 3 and all("s3cret" not in line for line in lines)
    first, second, third = map(json.loads, lines)
    assert set(first) == {"time", "client", "method", "path", "a2a_method", "status", "bytes",
                          "stream", "ms", "trace_id", "task_id", "principal"}
    assert first["time"].endswith("Z") and first["client"].startswith("127.0.0.1")
    assert (first["method"], first["path"], first["a2a_method"], first["status"]) == \
        ("POST", "/", "SendMessage", 200)
    assert (first["trace_id"], first["task_id"], first["principal"]) == (TRACE, task_id, "alice")
    assert first["bytes"] == len(data) and first["ms"] >= 0 and first["stream"] is False
    assert (second["path"], second["a2a_method"], second["task_id"]) == \
        (f"/tasks/{task_id}", "GetTask", task_id)
    assert len(second["trace_id"]) == 32 and second["trace_id"] != TRACE   # a trace of its own
    # SubscribeToTask about it: a trace of its own too; its task id ties it to the first
    assert (third["a2a_method"], third["task_id"]) == ("SubscribeToTask", task_id)
    assert third["trace_id"] not in (None, TRACE)


def test_the_plain_access_log_names_the_trace_of_a_traced_request(caplog):
    caplog.set_level(logging.INFO, logger="a2a_min.access")
    server = a2a_min.Server(lambda ctx: "ok", access_log=True)
    rpc(server, "GetTask", {"id": "nope"}, headers={**V1,
                                                     "traceparent": TRACEPARENT})
    rpc(server, "GetTask", {"id": "nope"})
    traced, plain = [r.getMessage() for r in caplog.records if r.name == "a2a_min.access"]
    assert traced.endswith(f" trace={TRACE}") and "trace=" not in plain


def test_access_log_takes_only_its_formats():
    with pytest.raises(ValueError, match="json"):
        a2a_min.Server(lambda ctx: "ok", access_log="xml")


def test_the_command_lines_json_access_log_is_json_lines_on_stderr():
    import http.client
    import sys
    from harness import free_port, run_host
    port = free_port()
    proc = run_host([sys.executable, "a2a_min.py", "--port", str(port), "--access-log", "json"],
                    port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/.well-known/agent-card.json", headers={"traceparent": TRACEPARENT})
        conn.getresponse().read()
        conn.request("GET", "/tasks?pageSize=1", headers={"A2A-Version": "1.0"})
        conn.getresponse().read()
        conn.close()
    finally:
        proc.terminate()
        err = proc.communicate(timeout=10)[1]
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert [(line["path"], line["status"]) for line in lines] == \
        [("/.well-known/agent-card.json", 200), ("/tasks", 200)], err
    assert lines[0]["trace_id"] == TRACE and lines[1]["a2a_method"] == "ListTasks"


def test_an_agents_failure_is_logged_with_its_trace(caplog):
    def agent(ctx):
        raise RuntimeError("boom")
    server = a2a_min.Server(agent)
    with caplog.at_level(logging.ERROR, logger="a2a_min"):
        rpc(server, "SendMessage", {"message": user_message("hi")},
            headers={**V1, "traceparent": TRACEPARENT})
    failed = [r.getMessage() for r in caplog.records if "agent failed" in r.getMessage()]
    assert failed and failed[0].endswith(f"(trace {TRACE})"), failed


@pytest.mark.parametrize("headers", [{}, {"traceparent": TRACEPARENT}], ids=["new", "given"])
def test_no_trace_is_kept_with_a_task(headers):
    """A task is stored as its JSON and nothing of the trace it was made in
    (a later request about it is in a trace of its own; the task's id is
    what ties them), and clients read no traceparent in it."""
    server = a2a_min.Server(lambda ctx: ctx.trace.traceparent)
    answer = rpc(server, "SendMessage", {"message": user_message("hi")},
                 headers={**V1, **headers})
    task = json.loads(answer.body)["result"]["task"]
    seen = task["artifacts"][0]["parts"][0]["text"]
    assert seen.startswith(f"00-{TRACE}-" if headers else "00-") and PARENT not in seen
    assert a2a_min._parse_traceparent(seen) is not None
    stored = server.store.get(task["id"], ("", None))
    assert not hasattr(stored, "origin")
