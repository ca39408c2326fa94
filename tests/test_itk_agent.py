"""itk/main.py, the interop kit's agent: two of them in this process, one
calling the other over each binding, as the kit's chains do (the kit itself:
itk/run_local.sh)."""

import base64
import importlib.util
import os
import threading

import pytest

pytest.importorskip("grpc")
pytest.importorskip("google.protobuf")

import a2a_client  # noqa: E402
import a2a_grpc  # noqa: E402
import a2a_min  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def itk():
    spec = importlib.util.spec_from_file_location("itk_main", os.path.join(ROOT, "itk", "main.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.HOLD_SECONDS = 2.0
    return module


@pytest.fixture(scope="module")
def agents(itk):
    """Two agents on 127.0.0.1, each on JSON-RPC, HTTP+JSON and gRPC: their base URLs."""
    urls, stops = [], []
    for _ in range(2):
        server = itk.make_server()
        grpc_server, _ = a2a_grpc.create_server(server, "127.0.0.1:0")
        grpc_server.start()
        httpd = a2a_min.make_http_server(server, "127.0.0.1", 0)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        urls.append(f"http://127.0.0.1:{httpd.server_address[1]}")
        stops.append((httpd, grpc_server))
    yield urls
    for httpd, grpc_server in stops:
        httpd.shutdown()
        grpc_server.stop(0)


def chain(itk, target, transport, streaming, behavior, hold=False):
    """The kit's one-hop instruction: "[a -> b]", then call ``target``, which answers "done"."""
    inner = itk.Instruction()
    inner.return_response.response = f"done:{transport}"
    inner.return_response.hold_task = hold
    hop = itk.Instruction()
    hop.steps.response_generator = 1
    trace = hop.steps.instructions.add().return_response
    trace.response, trace.hold_task = "[a -> b]", hold
    call = hop.steps.instructions.add().call_agent
    call.agent_card_uri, call.transport, call.streaming = target, transport, streaming
    call.instruction.CopyFrom(inner)
    getattr(call, behavior).SetInParent()
    return hop


@pytest.mark.parametrize("transport", ["jsonrpc", "grpc", "http_json"])
@pytest.mark.parametrize("streaming", [False, True])
def test_send_message_chain(itk, agents, transport, streaming):
    with a2a_client.Client(agents[0] + "/", binding="JSONRPC") as client:
        answer = client.send({"parts": [itk.instruction_part(
            chain(itk, agents[1], transport, streaming, "send_message"))]})
    status = answer["task"]["status"]
    assert status["state"] == "TASK_STATE_COMPLETED"
    assert status["message"]["parts"][0]["text"] == f"[a -> b]\ndone:{transport}"


@pytest.mark.parametrize("transport", ["jsonrpc", "grpc", "http_json"])
def test_resubscribe_chain(itk, agents, transport):
    """The callee holds its task; the caller disconnects, subscribes, finds task-finished."""
    with a2a_client.Client(agents[0], binding="JSONRPC") as client:
        with client.stream({"parts": [itk.instruction_part(
                chain(itk, agents[1], transport, True, "resubscribe", hold=True))]}) as stream:
            texts = [t for event in stream for t in itk.texts_of(event)]
    assert texts and "done:" + transport in texts[0] and texts[0].endswith(itk.FINISHED)


def test_instruction_decoding(itk):
    instruction = itk.Instruction()
    instruction.return_response.response = "hi"
    once = base64.b64encode(instruction.SerializeToString()).decode()
    twice = base64.b64encode(once.encode()).decode()     # a2a-sdk Python's 0.3 FileWithBytes
    for part in ({"raw": once}, {"raw": twice}, {"text": once}):
        assert itk.instruction_of({"parts": [part]}).return_response.response == "hi"
    assert itk.instruction_of({"parts": [{"text": "hello"}]}) is None


def test_failure_names_its_cause(itk, agents):
    """A step that fails fails the task, saying why (the kit's log shows it)."""
    bad = chain(itk, "http://127.0.0.1:9", "jsonrpc", False, "send_message")
    with a2a_client.Client(agents[0], binding="HTTP+JSON") as client:
        answer = client.send({"parts": [itk.instruction_part(bad)]})
    status = answer["task"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert "127.0.0.1:9" in status["message"]["parts"][0]["text"]
