"""The gRPC binding (a2a_grpc.py): our proto, its generated module, and the
binding's own behaviour on real channels. The operations themselves run over
gRPC in test_operations.py, as the third binding of the shared suite."""

import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from harness import ROOT, V1, grpc_available, require_sdk, scenario_agent, user_message

pytestmark = pytest.mark.skipif(not grpc_available(), reason=(
    "gRPC binding: needs grpcio, protobuf and googleapis-common-protos (pip install -e '.[grpc]')"))

MD = (("a2a-version", "1.0"),)


@pytest.fixture
def grpc_env():
    import grpc
    import a2a_grpc
    import a2a_min
    server = a2a_min.Server(scenario_agent, blocking_timeout=5)
    grpc_server, port = a2a_grpc.create_server(server, "127.0.0.1:0")
    grpc_server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield server, channel, grpc_server, port
    channel.close()
    grpc_server.stop(0)


def stub(channel, method, raw=False):
    import a2a_min
    import a2a_min_pb2 as pb
    request, response, streams = a2a_min.METHODS[method]
    make = channel.unary_stream if streams else channel.unary_unary
    if raw:
        return make(f"/lf.a2a.v1.A2AService/{method}",
                    response_deserializer=getattr(pb, response).FromString)
    return make(f"/lf.a2a.v1.A2AService/{method}",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=getattr(pb, response).FromString)


def message(text):
    import a2a_min_pb2 as pb
    return pb.SendMessageRequest(message=pb.Message(message_id=f"g-{time.time()}",
                                                    role=pb.ROLE_USER, parts=[pb.Part(text=text)]))


# -- the proto --------------------------------------------------------------------------

def test_proto_matches_the_messages_table():
    """Every message and field of proto/a2a.proto against a2a_min.MESSAGES / ENUMS."""
    import a2a_min
    import a2a_min_pb2 as pb
    from google.protobuf import descriptor
    scalars = {descriptor.FieldDescriptor.TYPE_STRING: "string",
               descriptor.FieldDescriptor.TYPE_INT32: "int32",
               descriptor.FieldDescriptor.TYPE_INT64: "int64",
               descriptor.FieldDescriptor.TYPE_BOOL: "bool",
               descriptor.FieldDescriptor.TYPE_BYTES: "bytes"}
    wkt = {"google.protobuf.Struct": "Struct", "google.protobuf.Value": "Value",
           "google.protobuf.Timestamp": "Timestamp"}
    assert set(pb.DESCRIPTOR.message_types_by_name) == set(a2a_min.MESSAGES)
    for name, rows in a2a_min.MESSAGES.items():
        fields = pb.DESCRIPTOR.message_types_by_name[name].fields_by_number
        assert set(fields) == {row[0] for row in rows}, name
        for number, json_name, type_, labels in rows:
            field = fields[number]
            assert field.json_name == json_name, (name, json_name)
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                value = field.message_type.fields_by_name["value"]
                got = f"map<string,{scalars.get(value.type) or value.message_type.name}>"
            elif field.message_type is not None:
                got = wkt.get(field.message_type.full_name, field.message_type.name)
            elif field.enum_type is not None:
                got = field.enum_type.name
            else:
                got = scalars[field.type]
            assert got == type_, (name, json_name)
            words = labels.split()
            is_map = type_.startswith("map<")
            repeated = getattr(field, "is_repeated", None)
            repeated = repeated() if callable(repeated) else (
                repeated if repeated is not None else field.label == field.LABEL_REPEATED)
            assert (repeated and not is_map) == ("repeated" in words)
            assert field.has_presence == ("optional" in words or field.message_type is not None
                                          and not repeated or field.containing_oneof is not None)
            oneof = field.containing_oneof
            real = oneof is not None and not name.startswith("_") and not oneof.name.startswith("_")
            assert (f"oneof:{oneof.name}" in words if real else not any(
                w.startswith("oneof:") for w in words)), (name, json_name)
    for enum, values in a2a_min.ENUMS.items():
        got = pb.DESCRIPTOR.enum_types_by_name[enum].values_by_number
        assert [got[i].name for i in range(len(values))] == list(values)


def test_proto_service_matches_the_method_table():
    import a2a_min
    import a2a_min_pb2 as pb
    service = pb.DESCRIPTOR.services_by_name["A2AService"]
    assert {m.name for m in service.methods} == set(a2a_min.METHODS)
    for method in service.methods:
        request, response, streams = a2a_min.METHODS[method.name]
        assert method.input_type.name == request
        assert method.output_type.full_name in (f"lf.a2a.v1.{response}", response)
        assert method.server_streaming == streams and not method.client_streaming


# What A2A 1.1's draft (branch dev-1.1) adds to the proto: our proto has it, and is
# otherwise the normative 1.0 one. (message, field): number, type.
DRAFT_1_1 = {("SendMessageConfiguration", "if_generation_match"): (5, "TYPE_INT64"),
             ("Task", "generation"): (7, "TYPE_INT64"),
             ("TaskStatusUpdateEvent", "generation"): (5, "TYPE_INT64"),
             ("TaskArtifactUpdateEvent", "generation"): (7, "TYPE_INT64"),
             ("GetTaskRequest", "current_generation"): (4, "TYPE_INT64")}


def test_the_draft_fields_are_where_the_draft_puts_them():
    import a2a_min_pb2 as pb
    for (message, field), (number, kind) in DRAFT_1_1.items():
        got = pb.DESCRIPTOR.message_types_by_name[message].fields_by_name[field]
        assert (got.number, got.type) == (number, got.TYPE_INT64), (message, field)
        assert kind == "TYPE_INT64"


def test_proto_is_wire_identical_to_the_normative_one():
    """Our descriptors against the reference SDK's (generated from the normative
    specification/a2a.proto), message by message and field by field."""
    require_sdk()
    def describe(which):
        proc = subprocess.run([sys.executable, f"{ROOT}/tests/describe_proto.py", which],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    def camel(name):
        head, *rest = name.split("_")
        return head + "".join(w[:1].upper() + w[1:] for w in rest)

    def normalize(value):
        """Drop json_name where it is the default (lowerCamelCase of the name):
        some generators record it, others leave it implicit; the wire is the same."""
        if isinstance(value, dict):
            if value.get("jsonName") == camel(value.get("name", "")):
                value = {k: v for k, v in value.items() if k != "jsonName"}
            return {k: normalize(v) for k, v in value.items()}
        if isinstance(value, list):
            return [normalize(v) for v in value]
        return value
    ours, theirs = normalize(describe("ours")), normalize(describe("sdk"))
    for message in ours["messageType"]:        # less the 1.1 draft's fields (DRAFT_1_1)
        message["field"] = [f for f in message["field"]
                            if (message["name"], f["name"]) not in DRAFT_1_1]
        message["oneofDecl"] = [o for o in message.get("oneofDecl", ())
                                if (message["name"], o["name"][1:]) not in DRAFT_1_1]
        if not message["oneofDecl"]:
            del message["oneofDecl"]
    assert ours["package"] == theirs["package"] == "lf.a2a.v1"
    for kind in ("messageType", "enumType", "service"):
        mine = {m["name"]: m for m in ours[kind]}
        normative = {m["name"]: m for m in theirs[kind]}
        assert set(mine) == set(normative), kind
        for name in normative:
            assert mine[name] == normative[name], (kind, name)


def test_generated_module_is_fresh():
    if importlib.util.find_spec("grpc_tools") is None:
        pytest.skip("needs grpcio-tools (the test extra) to regenerate a2a_min_pb2.py")
    proc = subprocess.run([sys.executable, f"{ROOT}/proto/generate.py", "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- the binding on a real channel -----------------------------------------------------

def test_errors_carry_status_details_in_the_trailer(grpc_env):
    import grpc
    from google.rpc import error_details_pb2, status_pb2
    import a2a_min_pb2 as pb
    _, channel, _, _ = grpc_env
    with pytest.raises(grpc.RpcError) as info:
        stub(channel, "GetTask")(pb.GetTaskRequest(id="nope"), metadata=MD)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    trailer = dict(info.value.trailing_metadata())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(trailer)
    assert status.code == grpc.StatusCode.NOT_FOUND.value[0]
    error_info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(error_info)
    assert (error_info.reason, error_info.domain) == ("TASK_NOT_FOUND", "a2a-protocol.org")
    assert error_info.metadata["taskId"] == "nope"
    with pytest.raises(grpc.RpcError) as info:
        stub(channel, "GetTask")(pb.GetTaskRequest(id="t", history_length=-1), metadata=MD)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    status = status_pb2.Status.FromString(
        dict(info.value.trailing_metadata())["grpc-status-details-bin"])
    bad_request = error_details_pb2.BadRequest()
    assert status.details[1].Unpack(bad_request)
    assert bad_request.field_violations[0].field == "historyLength"


def test_version_metadata(grpc_env):
    import grpc
    import a2a_min_pb2 as pb
    _, channel, _, _ = grpc_env
    for metadata in ((("a2a-version", "99.0"),), ()):
        with pytest.raises(grpc.RpcError) as info:
            stub(channel, "GetTask")(pb.GetTaskRequest(id="x"), metadata=metadata)
        assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "A2A-Version" in info.value.details()


def test_malformed_bytes_and_unknown_enums(grpc_env):
    import grpc
    import a2a_min_pb2 as pb
    _, channel, _, _ = grpc_env
    with pytest.raises(grpc.RpcError) as info:
        stub(channel, "GetTask", raw=True)(b"\xff\xff\xff\xff", metadata=MD)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    request = pb.ListTasksRequest()
    request.status = 42                                # not a TaskState
    with pytest.raises(grpc.RpcError) as info:
        stub(channel, "ListTasks")(request, metadata=MD)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "status" in info.value.details()


def test_numbers_json_cannot_hold_are_invalid_argument(grpc_env, caplog):
    """NaN and Infinity are doubles protobuf carries in a Struct or Value, but
    the core speaks JSON, which has no such numbers: INVALID_ARGUMENT, not an
    exception escaping to grpc (UNKNOWN, its message sent to the client)."""
    import grpc
    server, channel, _, _ = grpc_env
    for number in (float("nan"), float("inf"), float("-inf")):
        request = message("hi")
        request.message.metadata["x"] = number
        with pytest.raises(grpc.RpcError) as info:
            stub(channel, "SendMessage")(request, metadata=MD)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "NaN or Infinity" in info.value.details()
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_unexpected_errors_are_internal_without_details(grpc_env, monkeypatch, caplog):
    """An exception the core did not expect is logged, and the client gets
    INTERNAL with the generic message: never the exception's text."""
    import grpc
    import a2a_min
    import a2a_min_pb2 as pb
    server, channel, _, _ = grpc_env

    def broken(self, request, call):
        raise RuntimeError("secret internal detail")
    for method, call in (("GetTask", lambda: stub(channel, "GetTask")(
            pb.GetTaskRequest(id="x"), metadata=MD)),
            ("SubscribeToTask", lambda: next(subscribe(channel, "x")))):
        monkeypatch.setitem(a2a_min.OPERATIONS, method, broken)
        with pytest.raises(grpc.RpcError) as info:
            call()
        assert info.value.code() == grpc.StatusCode.INTERNAL
        assert info.value.details() == "internal error; see the server log"
    assert "secret internal detail" in caplog.text


def test_oversized_message_is_resource_exhausted(grpc_env):
    import grpc
    server, channel, _, _ = grpc_env
    big = message("x" * (server.limits["max_body_bytes"] + 10))
    with pytest.raises(grpc.RpcError) as info:
        stub(channel, "SendMessage")(big, metadata=MD)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert stub(channel, "SendMessage")(message("small"), metadata=MD).task.id


def test_client_cancel_mid_stream_and_deadline(grpc_env):
    import grpc
    import a2a_min_pb2 as pb
    _, channel, _, _ = grpc_env
    call = stub(channel, "SendStreamingMessage")(message("slow1"), metadata=MD)
    first = next(call)
    task_id = first.task.id
    call.cancel()                                      # the client goes away
    with pytest.raises(grpc.RpcError) as info:
        stub(channel, "SendMessage")(message("slow2"), metadata=MD, timeout=0.3)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    time.sleep(1.2)                                    # the first task went on without it
    task = stub(channel, "GetTask")(pb.GetTaskRequest(id=task_id), metadata=MD)
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert stub(channel, "SendMessage")(message("still here"), metadata=MD).task.id


def test_one_task_over_three_bindings(grpc_env):
    """Created over gRPC, read and followed over JSON-RPC, canceled over HTTP+JSON."""
    import a2a_min_pb2 as pb
    from harness import Client, RestClient
    server, channel, _, _ = grpc_env
    task = stub(channel, "SendMessage")(message("wait"), metadata=MD).task
    assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
    jsonrpc, rest = Client(server), RestClient(server)
    assert jsonrpc.result("GetTask", {"id": task.id})["status"]["state"] == \
        "TASK_STATE_INPUT_REQUIRED"
    box = {}
    watcher = threading.Thread(target=lambda: box.update(
        events=jsonrpc.stream("SubscribeToTask", {"id": task.id})))
    watcher.start()
    time.sleep(0.1)
    assert rest.result("CancelTask", {"id": task.id})["status"]["state"] == "TASK_STATE_CANCELED"
    watcher.join(5)
    assert box["events"][-1][1]["result"]["statusUpdate"]["status"]["state"] == \
        "TASK_STATE_CANCELED"
    again = stub(channel, "GetTask")(pb.GetTaskRequest(id=task.id), metadata=MD)
    assert again.status.state == pb.TASK_STATE_CANCELED


def test_graceful_stop_ends_open_streams(grpc_env):
    import grpc
    import a2a_min_pb2 as pb
    server, channel, grpc_server, _ = grpc_env
    task = stub(channel, "SendMessage")(message("wait"), metadata=MD).task
    call = stub(channel, "SubscribeToTask")(pb.SubscribeToTaskRequest(id=task.id), metadata=MD)
    assert next(call).task.id == task.id
    started = time.monotonic()
    grpc_server.stop(0.2).wait(5)
    with pytest.raises(grpc.RpcError):
        next(call)
    assert time.monotonic() - started < 3


def subscribe(channel, task_id, **kw):
    import a2a_min_pb2 as pb
    return stub(channel, "SubscribeToTask")(pb.SubscribeToTaskRequest(id=task_id),
                                            metadata=MD, **kw)


def test_a_stream_end_wakes_only_its_own_task(grpc_env, monkeypatch):
    """A client leaving one task's stream wakes that task's streams (so its
    thread is freed at once), not every stream on the server."""
    import a2a_min
    import a2a_min_pb2 as pb
    server, channel, _, _ = grpc_env
    woken, broadcasts = [], []
    wake = a2a_min._Channel.wake

    def counting_wake(channel):
        woken.append(channel.task["id"] if channel.task else None)
        wake(channel)
    monkeypatch.setattr(a2a_min._Channel, "wake", counting_wake)
    monkeypatch.setattr(server.live, "wake_streams", lambda: broadcasts.append(1))
    quiet = stub(channel, "SendMessage")(message("wait"), metadata=MD).task
    leaving = stub(channel, "SendMessage")(message("wait"), metadata=MD).task
    watch_quiet = subscribe(channel, quiet.id)
    watch_leaving = subscribe(channel, leaving.id)
    assert next(watch_quiet).task.id == quiet.id
    assert next(watch_leaving).task.id == leaving.id
    del woken[:]
    watch_leaving.cancel()
    deadline = time.monotonic() + 3
    while leaving.id not in woken and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)
    assert leaving.id in woken and not broadcasts
    if not server.store.shared:                # (a shared store's watch wakes them all)
        assert quiet.id not in woken
    stub(channel, "CancelTask")(pb.CancelTaskRequest(id=quiet.id), metadata=MD, timeout=2)
    assert [e.status_update.status.state for e in watch_quiet][-1] == pb.TASK_STATE_CANCELED


def limited_grpc(max_workers, max_streams, max_caller_streams=None):
    """A server whose gRPC side has few threads and a stream limit (all of it
    one client's unless ``max_caller_streams`` says); (server, channel, stop)."""
    import grpc
    import a2a_grpc
    import a2a_min
    server = a2a_min.Server(scenario_agent, blocking_timeout=5)
    grpc_server, port = a2a_grpc.create_server(
        server, "127.0.0.1:0", max_workers=max_workers, max_streams=max_streams,
        max_caller_streams=max_caller_streams or max_streams)
    grpc_server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")

    def stop():
        channel.close()
        grpc_server.stop(0)
    return server, channel, stop


def accepted_within(channel, task_id, seconds, **kw):
    """A new stream on ``task_id`` is accepted before ``seconds`` pass (the
    places of ended streams come back); the accepted stream is returned."""
    import grpc
    deadline = time.monotonic() + seconds
    while True:
        call = subscribe(channel, task_id, **kw)
        try:
            next(call)
            return call
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.monotonic() > deadline:
                raise
        time.sleep(0.02)


def test_streams_past_max_streams_are_resource_exhausted():
    """max_streams open streams on a task that stays open: the next stream is
    refused at once with RESOURCE_EXHAUSTED (and an ErrorInfo saying the
    limit), unary calls still answer, and once the streams close a new one
    is accepted."""
    import grpc
    from google.rpc import error_details_pb2, status_pb2
    import a2a_min_pb2 as pb
    server, channel, stop = limited_grpc(max_workers=4, max_streams=2)
    try:
        task = stub(channel, "SendMessage")(message("wait"), metadata=MD).task
        assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED     # its streams stay open
        streams = [subscribe(channel, task.id) for _ in range(2)]
        for call in streams:
            assert next(call).task.id == task.id                     # each holds its place
        for extra in (lambda: subscribe(channel, task.id),
                      lambda: stub(channel, "SendStreamingMessage")(message("hi"), metadata=MD)):
            started = time.monotonic()
            with pytest.raises(grpc.RpcError) as info:
                next(extra())
            assert time.monotonic() - started < 1
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "max_streams" in info.value.details() and " 2 " in info.value.details()
            status = status_pb2.Status.FromString(
                dict(info.value.trailing_metadata())["grpc-status-details-bin"])
            assert status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0]
            error_info = error_details_pb2.ErrorInfo()
            assert status.details[0].Unpack(error_info)
            assert (error_info.reason, error_info.domain) == ("TOO_MANY_STREAMS",
                                                               "a2a-protocol.org")
            assert error_info.metadata["limit"] == "2"
        got = stub(channel, "GetTask")(pb.GetTaskRequest(id=task.id), metadata=MD, timeout=2)
        assert got.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert stub(channel, "SendMessage")(message("hi"), metadata=MD, timeout=2).task.id
        for call in streams:
            call.cancel()
        # Well before the 15 s keep-alive tick: the ends wake the streams' task.
        accepted_within(channel, task.id, 3).cancel()
    finally:
        stop()


def test_one_client_holds_at_most_max_caller_streams_of_the_places():
    """Four places, one client's share of them two: its third stream is
    refused as a per-caller limit (RESOURCE_EXHAUSTED, CALLER_LIMIT) while
    places are left for other clients; once one of its streams ends, it may
    open another."""
    import grpc
    from google.rpc import error_details_pb2, status_pb2
    import a2a_min_pb2 as pb
    server, channel, stop = limited_grpc(max_workers=6, max_streams=4, max_caller_streams=2)
    try:
        task = stub(channel, "SendMessage")(message("wait"), metadata=MD).task
        assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        streams = [subscribe(channel, task.id) for _ in range(2)]
        for call in streams:
            assert next(call).task.id == task.id
        with pytest.raises(grpc.RpcError) as info:
            next(subscribe(channel, task.id))
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        status = status_pb2.Status.FromString(
            dict(info.value.trailing_metadata())["grpc-status-details-bin"])
        error_info = error_details_pb2.ErrorInfo()
        assert status.details[0].Unpack(error_info)
        assert error_info.reason == "CALLER_LIMIT"
        assert error_info.metadata["limit"] == "max_caller_streams"
        streams.pop().cancel()
        accepted_within(channel, task.id, 3).cancel()
        for call in streams:
            call.cancel()
    finally:
        stop()


def test_a_stream_gives_its_place_back_however_it_ends():
    """One place: after a refused call, a stream that ends normally, one the
    client cancels and one past its deadline, the next stream is accepted."""
    import grpc
    import a2a_min_pb2 as pb
    server, channel, stop = limited_grpc(max_workers=2, max_streams=1)
    try:
        task = stub(channel, "SendMessage")(message("wait"), metadata=MD).task
        with pytest.raises(grpc.RpcError) as info:                  # an error: no such task
            next(subscribe(channel, "no-such-task"))
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        events = list(stub(channel, "SendStreamingMessage")(message("hi"), metadata=MD))
        assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED   # a normal end
        accepted_within(channel, task.id, 3).cancel()               # the client cancels
        late = accepted_within(channel, task.id, 3, timeout=0.5)    # the deadline passes
        with pytest.raises(grpc.RpcError) as info:
            list(late)
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        last = accepted_within(channel, task.id, 3)
        stub(channel, "CancelTask")(pb.CancelTaskRequest(id=task.id), metadata=MD, timeout=2)
        assert [e.status_update.status.state for e in last][-1] == pb.TASK_STATE_CANCELED
        accepted_after_end = stub(channel, "SendStreamingMessage")(message("hi"), metadata=MD)
        assert list(accepted_after_end)
    finally:
        stop()


def test_max_streams_must_leave_unary_calls_a_thread():
    import a2a_grpc
    import a2a_min
    server = a2a_min.Server(scenario_agent)
    for workers, streams in ((4, 4), (4, 5), (4, -1), (1, 1)):
        with pytest.raises(ValueError, match="max_streams"):
            a2a_grpc.create_server(server, "127.0.0.1:0", max_workers=workers,
                                   max_streams=streams)


def test_card_advertises_grpc_as_host_port(grpc_env):
    server, _, _, port = grpc_env
    card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
    assert {"url": f"127.0.0.1:{port}", "protocolBinding": "GRPC",
            "protocolVersion": "1.0"} in card["supportedInterfaces"]


def test_demo_serves_three_bindings():
    import socket
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    proc = subprocess.Popen([sys.executable, "a2a_grpc.py", "--port", str(ports[0]),
                             "--grpc-port", str(ports[1])], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = proc.stdout.readline()
        assert f"gRPC on 127.0.0.1:{ports[1]}" in line, line
        import grpc
        import a2a_min_pb2 as pb
        with grpc.insecure_channel(f"127.0.0.1:{ports[1]}") as channel:
            answer = stub(channel, "SendMessage")(message("hi"), metadata=MD)
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", ports[0], timeout=10)
        conn.request("GET", f"/tasks/{answer.task.id}", headers={"A2A-Version": "1.0"})
        task = json.loads(conn.getresponse().read())
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        conn.request("GET", "/.well-known/agent-card.json")
        bindings = [i["protocolBinding"] for i in
                    json.loads(conn.getresponse().read())["supportedInterfaces"]]
        assert bindings == ["JSONRPC", "HTTP+JSON", "GRPC"] * 2     # at 1.0, then at 1.1
    finally:
        proc.terminate()
        proc.wait(10)
