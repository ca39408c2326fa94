"""Interop: the reference SDK's client (a2a-sdk from PyPI) against this server.

The client runs in a subprocess (tests/sdk_client.py): its generated protobuf
module registers lf.a2a.v1, which must not share an interpreter with another.
"""

import json
import subprocess
import sys

import pytest

import a2a_min
from harness import ROOT, Live, grpc_available, require_sdk, scenario_agent



@pytest.fixture(params=[None, "0.3", "mounted"], ids=["1.0", "compat-0.3", "mounted"])
def live(request):
    """One server on all the bindings this machine can serve (gRPC when installed);
    once more speaking 0.3 too, whose card lists a 0.3 interface beside the
    1.0 ones: the 1.x client must pick 1.0 and see no difference; once more
    mounted at the tenant "interop" of a server whose own agent answers
    otherwise: the client, given /interop, reads that agent's card, whose
    interfaces name the tenant, and must see no difference either."""
    server = a2a_min.Server(scenario_agent, name="Interop", description="public view",
                            extended_card={"description": "extended view"},
                            authenticate=lambda call: "sdk",   # (all count as authenticated:
                            # the extended card is served to the SDK's client, which sends none)
                            compat=None if request.param == "mounted" else request.param)
    front = server
    if request.param == "mounted":
        front = a2a_min.Server(lambda text: "not this agent", name="Front")
        front.call("SendMessage", {"message": {    # (a task the client must not list)
            "messageId": "front-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
        front.mount("interop", server)
    grpc_server = None
    if grpc_available():
        import a2a_grpc
        grpc_server, _ = a2a_grpc.create_server(front, "127.0.0.1:0")
        grpc_server.start()
    running = Live(front, timeout=5)
    if front is not server:
        running.url += "/interop"
    yield running
    running.close()
    if grpc_server is not None:
        grpc_server.stop(0)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_sdk_client(live, binding):
    require_sdk()
    if binding == "GRPC" and not grpc_available():
        pytest.skip("gRPC binding: needs the grpc extra")
    proc = subprocess.run([sys.executable, f"{ROOT}/tests/sdk_client.py", live.url, binding],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)

    task = seen["send"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "echo: hello"
    assert seen["get"]["id"] == task["id"] and seen["get"]["artifacts"] == task["artifacts"]
    assert "history" not in seen["get_history0"]
    assert seen["list"]["pageSize"] == 2 and seen["list"]["tasks"][0]["id"] == task["id"]

    stream = seen["stream"]
    assert "task" in stream[0]
    assert stream[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    text = "".join(e["artifactUpdate"]["artifact"]["parts"][0]["text"]
                   for e in stream if "artifactUpdate" in e)
    assert text == "echo: stream me please"

    assert seen["waiting"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert seen["subscribe_first"]["task"]["id"] == seen["waiting"]["id"]
    assert seen["cancel"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert seen["subscribe_rest"][-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert seen["cancel_again"].startswith("TaskNotCancelableError")
    assert seen["get_missing"].startswith("TaskNotFoundError")
    for name in ("create_push", "get_push", "list_push", "delete_push"):
        assert seen[name].startswith("PushNotificationNotSupportedError"), seen[name]
    assert seen["extended_card"]["description"] == "extended view"
    assert seen["extended_card"]["name"] == "Interop"
