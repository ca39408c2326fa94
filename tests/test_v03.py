"""A2A 0.3 on an a2a_min server (Server(compat="0.3"), the companion
a2a_v03.py): the reference SDK's 0.3 client from PyPI, in a virtual
environment of its own, against every host; golden 0.3 exchanges written
here from the 0.3 specification; one task read across the two versions; mixed
signals refused; and with compat off, the refusal that says how to turn it on."""

import base64
import json
import os
import subprocess
import sys
import time

import pytest

import a2a_min
import a2a_v03
from harness import (ROOT, AsgiHostClient, AsyncioHostClient, ThreadsHostClient, WsgiHostClient,
                     free_port, need, run_host, scenario_agent)

HOSTS = {"threads": ThreadsHostClient, "asyncio": AsyncioHostClient, "wsgi": WsgiHostClient,
         "asgi": AsgiHostClient}
V03 = {"content-type": "application/json"}                 # 0.3 sends no A2A-Version
V1 = {"content-type": "application/json", "a2a-version": "1.0"}


def sdk03_python():
    """The Python of a venv with a2a-sdk 0.3 (A2A_SDK03_PYTHON, or .venv-sdk03,
    which .ci/run makes: pip install 'a2a-sdk[http-server]==0.3.26' uvicorn grpcio)."""
    python = os.environ.get("A2A_SDK03_PYTHON") or os.path.join(ROOT, ".venv-sdk03", "bin",
                                                                  "python")
    need(python, "the 0.3 client: python -m venv .venv-sdk03 && .venv-sdk03/bin/pip install "
                 "'a2a-sdk[http-server]==0.3.26' uvicorn grpcio (or set A2A_SDK03_PYTHON)")
    return python


# The media types the 0.3 test agent takes: text, and the file sdk03_client.py sends.
INPUT_MODES = ("text/plain", "application/octet-stream")


def server(**options):
    options.setdefault("input_modes", INPUT_MODES)
    return a2a_min.Server(scenario_agent, name="0.3 test agent", compat="0.3",
                          push_notifications=True, **options)


def rpc(srv, method, params, headers=V03):
    response = srv.handle_http("POST", "/", "", dict(headers), json.dumps(
        {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode(),
        base_url="http://agent.test")
    if response.stream is not None:
        frames = b"".join(response.stream).decode()
        return [json.loads(line[6:]) for line in frames.splitlines() if line.startswith("data: ")]
    return json.loads(response.body)


def user(text, **fields):
    return {"kind": "message", "messageId": f"m-{text}-{time.monotonic_ns()}", "role": "user",
            "parts": [{"kind": "text", "text": text}], **fields}     # (a messageId is one send)


def check_sdk_run(seen, url, binding="JSONRPC"):
    """What the 0.3 SDK's client saw, call by call."""
    card = seen["card"]
    assert card["url"] == url + "/" and card["protocolVersion"] == "0.3.0"
    assert card["preferredTransport"] == "JSONRPC"
    task = seen["send"][-1]["task"]
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "echo: hello"}]
    assert task["history"][0]["role"] == "user"
    assert seen["get"]["id"] == task["id"] and len(seen["get"]["history"]) == 1
    updates = [e["update"] for e in seen["stream"] if e["update"]]
    assert updates[-1]["kind"] == "status-update" and updates[-1]["final"] is True
    assert updates[-1]["status"]["state"] == "completed"
    assert "".join(u["artifact"]["parts"][0]["text"] for u in updates
                   if u["kind"] == "artifact-update") == "one two three"
    assert all(u["final"] is False for u in updates[:-1] if u["kind"] == "status-update")
    assert seen["direct"] == [{"message": {**seen["direct"][0]["message"], "kind": "message",
                                           "role": "agent"}}]
    # A file's bytes come back in the history as they went: over HTTP+JSON
    # in the SDK's own FileWithBytes convention (base64 twice; see a2a_v03).
    sent_file = seen["file"][-1]["task"]["history"][0]["parts"][1]["file"]
    assert base64.b64decode(sent_file["bytes"]) == b"\x0a\x85\x01\xff\x00 not UTF-8"
    assert seen["waiting"]["status"]["state"] == "input-required"
    continued = seen["continued"][-1]["task"]
    assert continued["id"] == seen["waiting"]["id"] and continued["status"]["state"] == "completed"
    assert seen["canceled"]["status"]["state"] == "canceled"
    assert seen["followed"][0]["task"]["status"]["state"] == "input-required"
    assert seen["followed"][-1]["update"]["status"]["state"] == "canceled"
    assert seen["followed"][-1]["update"]["final"] is True
    # Followed across a continued turn (section 3.1.6): one Task first, then
    # updates only, through to the end; never back to submitted.
    across = seen["followed_across"]
    assert all("error" not in e for e in across), across
    assert across[0]["task"]["status"]["state"] == "input-required"
    assert [e for e in across[1:] if e["update"] is None] == [], across
    assert across[-1]["update"]["status"]["state"] == "completed", across
    assert across[-1]["update"]["final"] is True
    assert "submitted" not in [e["update"]["status"]["state"] for e in across[1:]
                               if e["update"]["kind"] == "status-update"]
    assert seen["continued_elsewhere"][-1]["task"]["status"]["state"] == "completed"
    assert seen["nonblocking"][-1]["task"]["status"]["state"] in ("submitted", "working")
    expected = {"taskId": task["id"], "pushNotificationConfig": {
        "id": "h1", "url": "https://hooks.invalid/a2a", "token": "t0k"}}
    assert seen["set"] == expected and seen["get_config"] == expected
    assert seen["list"]["result"] == [expected] and seen["delete"]["result"] is None
    assert {"JSONRPC": "-32001", "GRPC": "NOT_FOUND"}.get(binding, "404") in seen["not_found"]


def run_sdk(url, binding="JSONRPC"):
    done = subprocess.run([sdk03_python(), os.path.join(ROOT, "tests", "sdk03_client.py"), url,
                           binding],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.parametrize("host", sorted(HOSTS))
def test_the_sdks_0_3_client_on_every_host(host, binding):
    if host == "asgi":
        need("uvicorn", "ASGI host: needs uvicorn (the test extra)")
    running = HOSTS[host](server())
    try:
        url = f"http://127.0.0.1:{running.port}"
        check_sdk_run(run_sdk(url, binding), url, binding)
    finally:
        running.close()


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_sdks_0_3_client_on_the_lambda_handler(binding):
    sdk03_python()
    port = free_port()
    proc = run_host(["env", "PYTHONPATH=tests", sys.executable, "examples/lambda_local.py",
                     str(port), "--handler", "v03_app:handler"], port)
    try:
        url = f"http://127.0.0.1:{port}"
        check_sdk_run(run_sdk(url, binding), url, binding)
    finally:
        proc.terminate()
        proc.wait(10)


# -- golden exchanges, written from the 0.3 specification ------------------------------

def test_golden_message_send_and_its_task():
    srv = server(input_modes=["*/*"])              # (every kind of part, taken)
    answer = rpc(srv, "message/send", {"message": {
        "kind": "message", "messageId": "m1", "role": "user", "metadata": {"k": 1},
        "parts": [{"kind": "text", "text": "hi"},
                  {"kind": "data", "data": {"x": 1}},
                  {"kind": "file", "file": {"uri": "https://files.invalid/a.png", "name": "a.png",
                                            "mimeType": "image/png"}},
                  {"kind": "file", "file": {"bytes": "aGk=", "name": "b.txt"}}]},
        "configuration": {"historyLength": 5, "acceptedOutputModes": ["text/plain"]}})
    task = answer["result"]
    assert answer["jsonrpc"] == "2.0" and answer["id"] == 7
    assert set(task) == {"kind", "id", "contextId", "status", "artifacts", "history"}
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    assert task["status"]["timestamp"].endswith("Z")
    sent = task["history"][0]
    assert sent == {"kind": "message", "role": "user", "messageId": "m1", "metadata": {"k": 1},
                    "taskId": task["id"], "contextId": task["contextId"], "parts": [
                        {"kind": "text", "text": "hi"}, {"kind": "data", "data": {"x": 1}},
                        {"kind": "file", "file": {"uri": "https://files.invalid/a.png",
                                                  "name": "a.png", "mimeType": "image/png"}},
                        {"kind": "file", "file": {"bytes": "aGk=", "name": "b.txt"}}]}
    assert task["artifacts"] == [{"artifactId": task["artifacts"][0]["artifactId"],
                                  "parts": [{"kind": "text", "text": "echo: hi"}]}]


def test_golden_stream_events_and_final():
    events = [e["result"] for e in rpc(server(), "message/stream", {"message": user("chunks")})]
    kinds = [e["kind"] for e in events]      # (a fourth chunk, empty, may end the artifact)
    assert kinds in (["task", "status-update"] + ["artifact-update"] * n + ["status-update"]
                     for n in (3, 4)), kinds
    assert events[0]["status"]["state"] == "submitted"
    assert [e["final"] for e in events if e["kind"] == "status-update"] == [False, True]
    assert events[-1]["status"]["state"] == "completed"
    first, *rest = [e for e in events if e["kind"] == "artifact-update"]
    assert "append" not in first or first["append"] is False
    assert all(e["append"] is True for e in rest) and rest[-1]["lastChunk"] is True
    assert [p["text"] for e in [first, *rest] for p in e["artifact"]["parts"] if p["text"]] == [
        "one ", "two ", "three"]


def test_golden_push_config_methods():
    srv = server()
    task_id = rpc(srv, "message/send", {"message": user("x")})["result"]["id"]
    config = {"taskId": task_id, "pushNotificationConfig": {
        "id": "c1", "url": "https://hooks.invalid/n", "token": "tok",
        "authentication": {"schemes": ["Bearer"], "credentials": "secret"}}}
    assert rpc(srv, "tasks/pushNotificationConfig/set", config)["result"] == config
    assert rpc(srv, "tasks/pushNotificationConfig/get", {"id": task_id})["result"] == config
    assert rpc(srv, "tasks/pushNotificationConfig/get", {
        "id": task_id, "pushNotificationConfigId": "c1"})["result"] == config
    assert rpc(srv, "tasks/pushNotificationConfig/list", {"id": task_id})["result"] == [config]
    assert rpc(srv, "tasks/pushNotificationConfig/delete", {
        "id": task_id, "pushNotificationConfigId": "c1"}) == {"jsonrpc": "2.0", "id": 7,
                                                              "result": None}
    assert rpc(srv, "tasks/pushNotificationConfig/list", {"id": task_id})["result"] == []


def test_golden_errors_keep_the_0_3_codes():
    srv = server()
    assert rpc(srv, "tasks/get", {"id": "nope"})["error"]["code"] == -32001
    done = rpc(srv, "message/send", {"message": user("x")})["result"]["id"]
    assert rpc(srv, "tasks/cancel", {"id": done})["error"]["code"] == -32002
    assert rpc(srv, "tasks/resubscribe", {"id": done})["error"]["code"] == -32004
    assert rpc(srv, "agent/getAuthenticatedExtendedCard", {})["error"]["code"] == -32007
    # 1.0's required-extension error (-32008) has no 0.3 code: Invalid Request.
    strict = a2a_min.Server(scenario_agent, compat="0.3",
                            required_extensions=["https://ext.invalid/x"])
    assert rpc(strict, "message/send", {"message": user("x")})["error"]["code"] == -32600


def test_extended_card_in_0_3():
    srv = server(extended_card={"description": "more"}, authenticate=a2a_min.BearerAuth(
        {"t": "alice"}))
    card = rpc(srv, "agent/getAuthenticatedExtendedCard", {},
               {**V03, "authorization": "Bearer t"})["result"]
    assert card["description"] == "more" and card["protocolVersion"] == "0.3.0"
    assert card["supportsAuthenticatedExtendedCard"] is True


# -- one task, both versions ---------------------------------------------------------------

def test_one_task_read_followed_and_canceled_across_versions():
    srv = server()
    made = rpc(srv, "message/send", {"message": user("wait")})["result"]
    got = rpc(srv, "GetTask", {"id": made["id"]}, V1)["result"]
    assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert got["history"][0]["parts"] == [{"text": "wait"}]
    assert got["history"][0]["role"] == "ROLE_USER"
    continued = rpc(srv, "SendMessage", {"message": {
        "messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "wait"}],
        "taskId": made["id"]}}, V1)["result"]["task"]
    assert continued["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert rpc(srv, "tasks/get", {"id": made["id"]})["result"]["history"][-1]["role"] == "agent"
    canceled = rpc(srv, "CancelTask", {"id": made["id"]}, V1)["result"]
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert rpc(srv, "tasks/get", {"id": made["id"]})["result"]["status"]["state"] == "canceled"
    # and the other way: made by 1.0, canceled by 0.3
    made = rpc(srv, "SendMessage", {"message": {"messageId": "m3", "role": "ROLE_USER",
                                                "parts": [{"text": "wait"}]}}, V1)["result"]
    assert rpc(srv, "tasks/cancel", {"id": made["task"]["id"]})["result"]["status"]["state"] \
        == "canceled"
    listed = rpc(srv, "ListTasks", {}, V1)["result"]["tasks"]
    assert {t["status"]["state"] for t in listed} == {"TASK_STATE_CANCELED"}


# -- mixed signals, and compat off ---------------------------------------------------------

@pytest.mark.parametrize("method, params, headers, expected", [
    ("message/send", {"message": user("x")}, V1, "is an A2A 0.3 method, but this request says"),
    ("message/send", {"message": {**user("x"), "kind": "task"}}, V03,
     "message.kind: is 'task', but this must be a 'message'"),
    ("message/send", {"message": {**user("x"), "parts": [{"kind": "text", "data": {}}]}}, V03,
     "says kind 'text' but has no text"),
    ("message/send", {"message": {**user("x"), "parts": [{"kind": "image", "x": 1}]}}, V03,
     "must be 'text', 'file' or 'data'"),
    ("message/send", {"message": {**user("x"), "role": "ROLE_USER"}}, V03,
     "must be 'user' or 'agent' in 0.3"),
    ("message/send", {"message": {**user("x"), "parts": [{"kind": "file", "file": {
        "bytes": "aGk=", "uri": "https://x.invalid/"}}]}}, V03, 'exactly one of "bytes" and "uri"'),
    ("tasks/list", {"status": "TASK_STATE_WORKING"}, V03, "must be a 0.3 task state"),
])
def test_mixed_signals_are_refused_with_the_fix(method, params, headers, expected):
    srv = server()
    answer = rpc(srv, method, params, headers)
    assert expected in answer["error"]["message"], answer
    assert answer["error"]["code"] in (-32600, -32602)
    assert rpc(srv, "ListTasks", {}, V1)["result"]["tasks"] == []   # nothing half done


def test_a_1_0_method_without_a_version_is_still_refused_with_compat_on():
    answer = rpc(server(), "SendMessage", {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}, V03)
    assert answer["error"]["code"] == -32009


def test_compat_off_keeps_the_refusal_and_names_the_option():
    plain = a2a_min.Server(scenario_agent)
    answer = rpc(plain, "message/send", {"message": user("x")})
    assert answer["error"]["code"] == -32601
    assert "SendMessage" in answer["error"]["message"]
    assert "compat='0.3'" in answer["error"]["message"]
    card = json.loads(plain.handle_http("GET", "/.well-known/agent-card.json", "", {}, b"",
                                        base_url="http://agent.test").body)
    assert "url" not in card and "protocolVersion" not in card


def test_the_card_for_both_versions():
    card = json.loads(server().handle_http("GET", "/.well-known/agent-card.json", "", {}, b"",
                                           base_url="http://agent.test").body)
    assert card["supportedInterfaces"][:2] == [
        {"url": "http://agent.test/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "http://agent.test", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]
    assert [i["protocolVersion"] for i in card["supportedInterfaces"][2:4]] == ["1.1"] * 2
    assert card["supportedInterfaces"][4:] == [
        {"url": "http://agent.test/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": "http://agent.test", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"}]
    assert card["url"] == "http://agent.test/" and card["protocolVersion"] == a2a_v03.VERSION
    assert card["preferredTransport"] == "JSONRPC"
    assert card["additionalInterfaces"] == [{"url": "http://agent.test/", "transport": "JSONRPC"},
                                            {"url": "http://agent.test", "transport": "HTTP+JSON"}]
    import a2a_client                      # our 1.0 client still picks a 1.0 interface
    assert a2a_client.choose_interface(card, "http://agent.test/.well-known/agent-card.json"
                                       )["protocolVersion"] == "1.0"


def test_compat_needs_a_known_version():
    with pytest.raises(ValueError):
        a2a_min.Server(scenario_agent, compat="0.2")


# -- our client, calling an agent that speaks only 0.3 ----------------------------------

def test_our_client_and_command_line_call_the_sdks_0_3_server():
    import a2a_client
    port = free_port()
    proc = run_host([sdk03_python(), "tests/sdk03_server.py", str(port)], port)
    url = f"http://127.0.0.1:{port}"
    try:
        with a2a_client.Client(url) as client:
            assert client.interface["protocolVersion"] == "0.3" and "A2A-Version" not in \
                client.headers
            task = client.send("hello")["task"]                 # 1.0 shapes, from a 0.3 agent
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert task["artifacts"][0]["parts"] == [{"text": "echo: hello"}]
            assert client.get_task(task["id"])["id"] == task["id"]
            events = list(client.stream("streamed"))
            assert "task" in events[0] and events[-1]["statusUpdate"]["status"]["state"] == \
                "TASK_STATE_COMPLETED"
            waiting = client.send("wait")["task"]
            assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            assert client.cancel_task(waiting["id"])["status"]["state"] == "TASK_STATE_CANCELED"
            config = client.create_push_config(task["id"], "https://hooks.invalid/a", config_id="c1")
            assert config == {"taskId": task["id"], "id": "c1", "url": "https://hooks.invalid/a"}
            assert client.get_push_config(task["id"], "c1")["url"] == "https://hooks.invalid/a"
            assert [c["id"] for c in client.list_push_configs(task["id"])["configs"]] == ["c1"]
            assert client.delete_push_config(task["id"], "c1") == {}
            with pytest.raises(a2a_min.TaskNotFoundError):
                client.get_task("no-such-task")
            with pytest.raises(a2a_min.InvalidParamsError):
                a2a_client.Client(url, tenant="acme").send("hi")     # 0.3 has no tenants
        done = subprocess.run([sys.executable, "a2a_min.py", "send", url, "hi", "--stream"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.splitlines()[-1].endswith("COMPLETED"), \
            done.stderr
        card = subprocess.run([sys.executable, "a2a_min.py", "card", url], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert f"JSONRPC    0.3.0 {url}/" in card.stdout, card.stdout
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_agentcore_style_request_on_a_single_path():
    """AWS Bedrock AgentCore's documented A2A contract: POST the 0.3 message/send
    to one path (here /invocations, single-path mode), no A2A-Version."""
    srv = a2a_min.Server(scenario_agent, compat="0.3", single_path="/invocations")
    response = srv.handle_http("POST", "/invocations", "", dict(V03), json.dumps({
        "jsonrpc": "2.0", "id": "req-1", "method": "message/send", "params": {"message": {
            "role": "user", "parts": [{"kind": "text", "text": "hello"}],
            "messageId": "m-1", "kind": "message"}}}).encode(), base_url="http://agentcore.test")
    answer = json.loads(response.body)
    assert response.status == 200 and answer["id"] == "req-1"
    assert answer["result"]["kind"] == "task" and answer["result"]["status"]["state"] == \
        "completed"
    card = json.loads(srv.handle_http("GET", "/invocations", "", {}, b"",
                                      base_url="http://agentcore.test").body)
    assert card["url"] == "http://agentcore.test/invocations" and card["protocolVersion"] == \
        "0.3.0"


# -- 0.3 over HTTP+JSON: the 0.3 proto's JSON under /v1 ------------------------------------

def rest(srv, verb, path, body=None, headers=V03, query=""):
    response = srv.handle_http(verb, path, query, dict(headers),
                               b"" if body is None else json.dumps(body).encode(),
                               base_url="http://agent.test")
    if response.stream is not None:
        frames = b"".join(response.stream).decode()
        return response.status, [json.loads(line[6:]) for line in frames.splitlines()
                                 if line.startswith("data: ")]
    return response.status, json.loads(response.body) if response.body else None


def proto_user(text):
    return {"messageId": "p-" + text, "role": "ROLE_USER", "content": [{"text": text}]}


def test_golden_rest_send_get_stream_cancel():
    srv = server(input_modes=["*/*"])
    status, answer = rest(srv, "POST", "/v1/message:send", {"message": {
        **proto_user("hi"), "content": [
            {"text": "hi"}, {"data": {"data": {"x": 1}}},
            {"file": {"fileWithUri": "https://files.invalid/a.png", "mimeType": "image/png"}}]},
        "configuration": {"historyLength": 5, "blocking": True}})   # (proto3: absent is false)
    task = answer["task"]
    assert status == 200 and task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["history"][0]["content"] == [
        {"text": "hi"}, {"data": {"data": {"x": 1}}},
        {"file": {"fileWithUri": "https://files.invalid/a.png", "mimeType": "image/png"}}]
    assert task["artifacts"][0]["parts"] == [{"text": "echo: hi"}]
    status, got = rest(srv, "GET", f"/v1/tasks/{task['id']}", query="historyLength=0")
    assert status == 200 and got["id"] == task["id"] and "history" not in got
    status, events = rest(srv, "POST", "/v1/message:stream", {"message": proto_user("chunks")})
    assert list(events[0]) == ["task"] and events[-1]["statusUpdate"]["final"] is True
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    waiting = rest(srv, "POST", "/v1/message:send", {"message": proto_user("wait")})[1]["task"]
    status, canceled = rest(srv, "POST", f"/v1/tasks/{waiting['id']}:cancel")
    assert canceled["status"]["state"] == "TASK_STATE_CANCELLED"          # 0.3's spelling
    assert rest(srv, "GET", f"/v1/tasks/{waiting['id']}", headers=V03)[1]["status"]["state"] \
        == "TASK_STATE_CANCELLED"
    assert rpc(srv, "GetTask", {"id": waiting["id"]}, V1)["result"]["status"]["state"] == \
        "TASK_STATE_CANCELED"                                              # the same task, in 1.0
    status, error = rest(srv, "GET", "/v1/tasks/nope")
    assert status == 404 and error["code"] == -32001 and "nope" in error["message"]


def test_golden_rest_push_configs():
    srv = server()
    task_id = rest(srv, "POST", "/v1/message:send", {"message": proto_user("x")})[1]["task"]["id"]
    status, made = rest(srv, "POST", f"/v1/tasks/{task_id}/pushNotificationConfigs", {
        "parent": f"tasks/{task_id}", "configId": "c1", "config": {
            "pushNotificationConfig": {"url": "https://hooks.invalid/n", "token": "t"}}})
    expected = {"name": f"tasks/{task_id}/pushNotificationConfigs/c1", "pushNotificationConfig": {
        "id": "c1", "url": "https://hooks.invalid/n", "token": "t"}}
    assert status == 200 and made == expected
    assert rest(srv, "GET", f"/v1/tasks/{task_id}/pushNotificationConfigs/c1")[1] == expected
    assert rest(srv, "GET", f"/v1/tasks/{task_id}/pushNotificationConfigs")[1] == {
        "configs": [expected], "nextPageToken": ""}
    assert rest(srv, "DELETE", f"/v1/tasks/{task_id}/pushNotificationConfigs/c1") == (200, {})


def test_rest_v1_with_a_1_0_header_is_still_the_tenant_v1():
    srv = server()
    status, answer = rest(srv, "POST", "/v1/message:send", {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}, V1)
    assert status == 200 and answer["task"]["history"][0]["parts"] == [{"text": "x"}]
    listed = rest(srv, "GET", "/v1/tasks", headers=V1)[1]["tasks"]
    assert [t["id"] for t in listed] == [answer["task"]["id"]]
    assert rest(srv, "GET", "/tasks", headers=V1)[1]["tasks"] == []   # (not the default tenant)


@pytest.mark.parametrize("body, expected", [
    ({"message": {"messageId": "x", "role": "user", "parts": [{"kind": "text", "text": "x"}]}},
     "is a JSON-RPC 0.3 message"),
    ({"message": {**proto_user("x"), "content": [{"file": {}}]}},
     'exactly one of "fileWithUri" and "fileWithBytes"'),
    ({"message": {**proto_user("x"), "content": [{"image": 1}]}},
     'needs one of "text", "file" and "data"'),
])
def test_rest_mixed_signals(body, expected):
    srv = server()
    status, error = rest(srv, "POST", "/v1/message:send", body)
    assert status == 400 and expected in error["message"], error
    assert rpc(srv, "ListTasks", {}, V1)["result"]["tasks"] == []


def test_webhooks_get_the_payload_of_the_version_they_were_registered_in():
    """A webhook set through 0.3 is sent the task in 0.3 shape; one set through
    1.0 the 1.0 StreamResponse; both for the same events of one task (a real
    receiver on 127.0.0.1)."""
    from webhook_receiver import Receiver
    receiver = Receiver()
    srv = server(push_allow=["127.0.0.1/32"], push_backoff=0.01, push_timeout=2.0)
    try:
        waiting = rpc(srv, "message/send", {"message": user("wait")})["result"]
        set03 = rpc(srv, "tasks/pushNotificationConfig/set", {
            "taskId": waiting["id"], "pushNotificationConfig": {
                "id": "old", "url": receiver.url("/ok/v03"), "token": "t03"}})["result"]
        assert "payloadVersion" not in json.dumps(set03)
        made = rpc(srv, "CreateTaskPushNotificationConfig", {
            "taskId": waiting["id"], "id": "new", "url": receiver.url("/ok/v10")}, V1)["result"]
        assert "payloadVersion" not in made
        listed = rpc(srv, "ListTaskPushNotificationConfigs", {"taskId": waiting["id"]}, V1)
        assert all("payloadVersion" not in c for c in listed["result"]["configs"])
        rpc(srv, "CancelTask", {"id": waiting["id"]}, V1)
        old = receiver.wait(1, "/ok/v03")
        new = receiver.wait(1, "/ok/v10")
        assert old and new
        assert old[-1]["body"]["kind"] == "task" and old[-1]["body"]["id"] == waiting["id"]
        assert old[-1]["body"]["status"]["state"] == "canceled"
        assert old[-1]["headers"]["x-a2a-notification-token"] == "t03"
        assert new[-1]["body"]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
        # ... and through message/send's own configuration.
        inline = rpc(srv, "message/send", {"message": user("wait"), "configuration": {
            "pushNotificationConfig": {"url": receiver.url("/ok/inline")}}})["result"]
        rpc(srv, "tasks/cancel", {"id": inline["id"]})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
                r["body"]["status"]["state"] == "canceled" for r in receiver.wait(1, "/ok/inline")):
            time.sleep(0.05)
        got = receiver.wait(1, "/ok/inline")
        assert got and all(r["body"]["kind"] == "task" for r in got)
        assert got[-1]["body"]["status"]["state"] == "canceled"
    finally:
        receiver.close()


@pytest.mark.parametrize("message, expected", [
    ({"kind": "message", "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
     "message.kind is an A2A 0.3 field"),
    ({"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text", "text": "x"}]},
     "message.parts[0].kind is an A2A 0.3 field"),
    ({"messageId": "m", "role": "ROLE_USER", "parts": [{"file": {"uri": "https://x.invalid/"}}]},
     "message.parts[0].file is an A2A 0.3 field"),
])
def test_0_3_fields_in_a_1_0_request_are_refused_with_the_fix(message, expected):
    srv = server()
    answer = rpc(srv, "SendMessage", {"message": message}, V1)
    assert answer["error"]["code"] == -32602 and expected in answer["error"]["message"]
    assert "message/send" in answer["error"]["message"]
    status, error = rest(srv, "POST", "/message:send", {"message": message}, V1)
    assert status == 400 and expected in error["error"]["message"]
    assert rpc(srv, "ListTasks", {}, V1)["result"]["tasks"] == []


# -- the shortcut: a Task's 0.3 JSON written as text ------------------------------------

def _tasks_of_every_shape():
    message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "héllo ☃"}],
               "contextId": "c", "taskId": "t", "referenceTaskIds": ["a", "b"],
               "extensions": ["urn:x"], "metadata": {"k": [1, {"n": None}]}}
    parts = [{"text": "plain"}, {"text": "with", "metadata": {"m": 1}},
             {"raw": "eA==", "filename": "x.bin", "mediaType": "application/octet-stream"},
             {"url": "https://example.com/f", "filename": "f"}, {"data": {"a": 1}},
             {"data": [1, 2]}, {"data": "a string"}]
    yield {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    yield {"id": "t", "status": {}}
    yield {"id": "t\u2028\"quoted\"\\", "contextId": "c", "status": {
        "state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {**message, "role": "ROLE_AGENT"}},
        "history": [message, {"messageId": "m2", "role": "ROLE_AGENT", "parts": parts}],
        "artifacts": [{"artifactId": "a1", "name": "n", "description": "d", "parts": parts,
                       "metadata": {"x": True}, "extensions": ["urn:y"]},
                      {"artifactId": "a2", "parts": []}],
        "metadata": {"deep": {"er": [1.5, False]}}}
    yield {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_UNSPECIFIED"},
           "history": [], "artifacts": [], "metadata": {}}


@pytest.mark.parametrize("request_id", [1, 0, -7, "r-1", "ü"])
def test_the_written_task_is_exactly_the_translated_one(request_id):
    for task in _tasks_of_every_shape():
        for method, answer in (("GetTask", task), ("CancelTask", task),
                               ("SendMessage", {"task": task})):
            written = a2a_v03._result_body(request_id, method, answer)
            assert written.endswith(b"}\n")
            assert json.loads(written) == {"jsonrpc": "2.0", "id": request_id,
                                           "result": a2a_v03._task_out(task)}, task


def test_a_task_that_cannot_be_utf8_is_escaped_not_lost():
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "lone \ud800"}]}]}
    body = a2a_v03._result_body(1, "GetTask", task)
    assert json.loads(body)["result"]["artifacts"][0]["parts"][0]["text"] == "lone \ud800"


def test_answers_that_are_not_tasks_go_through_the_tables():
    message = {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}
    body = a2a_v03._result_body(3, "SendMessage", {"message": message})
    assert json.loads(body)["result"] == a2a_v03._message_out(message)
    config = {"taskId": "t", "id": "p", "url": "https://h/x"}
    body = a2a_v03._result_body(4, "GetTaskPushNotificationConfig", config)
    assert json.loads(body)["result"] == a2a_v03._push_config_out(config)


# -- our client, calling an agent that speaks 0.3 over HTTP+JSON ----------------------------

def _file_echo(ctx):
    """The scenario agent, and the message's files given back as an artifact."""
    files = [part for part in ctx.message["parts"] if "raw" in part]
    if files:
        yield a2a_min.artifact_update(files)
    yield from scenario_agent(ctx)


def _v03_only(card):
    """A card as a 0.3-only agent shows it: url, preferredTransport,
    additionalInterfaces, and no supportedInterfaces."""
    return {k: v for k, v in card.items() if k != "supportedInterfaces"}


FILE_BYTES = b"\x0a\x05hello\xff\x00"                  # not UTF-8, and not base64 text


def _exercise_v03(client, sent, binding="HTTP+JSON"):
    """Every operation over 0.3's HTTP+JSON (or gRPC), in 1.0 terms; ``sent``:
    the HTTP requests seen (verb, URL, headers)."""
    assert client.interface["protocolVersion"] == "0.3" and client.binding == binding
    task = client.send("hello")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [p for a in task["artifacts"] for p in a["parts"]] == [{"text": "echo: hello"}]
    assert client.get_task(task["id"], history_length=1)["id"] == task["id"]
    events = list(client.stream("hello again"))
    assert "task" in events[0] and \
        events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "final" not in events[-1]["statusUpdate"]
    waiting = client.send("wait")["task"]
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert waiting["status"]["message"]["role"] == "ROLE_AGENT"
    assert client.cancel_task(waiting["id"])["status"]["state"] == "TASK_STATE_CANCELED"
    config = client.create_push_config(task["id"], "https://hooks.invalid/a", config_id="c1",
                                       token="tok")
    assert config == {"taskId": task["id"], "id": "c1", "url": "https://hooks.invalid/a",
                      "token": "tok"}
    assert client.get_push_config(task["id"], "c1") == config
    with pytest.raises(a2a_min.TaskNotFoundError):
        client.get_task("no-such-task")
    # A file's bytes, there and back: a2a-sdk 0.3's FileWithBytes convention (base64 twice).
    raw = base64.b64encode(FILE_BYTES).decode()
    part = {"raw": raw, "mediaType": "application/octet-stream", "filename": "f.bin"}
    answer = client.send({"role": "ROLE_USER", "parts": [{"text": "file"}, part]})
    assert part in [p for a in answer["task"]["artifacts"] for p in a["parts"]]
    calls = [(url, headers) for _, url, headers in sent if "/.well-known/" not in url]
    if binding == "HTTP+JSON":
        assert calls and all("/v1/" in url and "A2A-Version" not in headers
                             for url, headers in calls)
    with pytest.raises(a2a_min.InvalidParamsError):                      # 0.3 has no tenants
        client.call("GetTask", {"id": task["id"], "tenant": "acme"})
    return task


def test_our_client_speaks_0_3_over_http_json_to_our_server():
    import a2a_client
    from harness import Live
    live = Live(a2a_min.Server(_file_echo, name="0.3 test agent", compat="0.3",
                               push_notifications=True, input_modes=["*/*"]))
    sent = []
    try:
        card, card_url = a2a_client.fetch_card(live.url)
        with a2a_client.Client(_v03_only(card), card_url=card_url, binding="HTTP+JSON",
                               on_request=lambda verb, url, headers, body: sent.append(
                                   (verb, url, headers))) as client:
            task = _exercise_v03(client, sent)
            slow = client.send("slow0.3", immediate=True)["task"]
            events = list(client.subscribe(slow["id"]))
            assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
            assert [c["id"] for c in client.list_push_configs(task["id"])["configs"]] == ["c1"]
            assert client.delete_push_config(task["id"], "c1") == {}
            with pytest.raises(a2a_min.TaskNotFoundError):
                client.get_push_config(task["id"], "c1")
        # The card's own order: JSON-RPC first, as a 0.3 client with no preference takes it.
        with a2a_client.Client(_v03_only(card), card_url=card_url) as client:
            assert client.binding == "JSONRPC"
    finally:
        live.close()


def test_our_client_speaks_0_3_over_http_json_to_the_sdks_0_3_server():
    import a2a_client
    port = free_port()
    proc = run_host([sdk03_python(), "tests/sdk03_server.py", str(port), "rest"], port)
    sent = []
    try:
        with a2a_client.Client(f"http://127.0.0.1:{port}", binding="HTTP+JSON",
                               on_request=lambda verb, url, headers, body: sent.append(
                                   (verb, url, headers))) as client:
            assert client.url == f"http://127.0.0.1:{port}/rest/"
            _exercise_v03(client, sent)
            # (a2a-sdk 0.3's HTTP+JSON application has no list and delete of push configs)
    finally:
        proc.terminate()
        proc.wait(10)


def test_file_bytes_are_read_as_either_0_3_convention():
    raw = base64.b64encode(FILE_BYTES).decode()
    assert a2a_v03._bytes_in(raw) == raw                                  # the specification
    assert a2a_v03._bytes_in(a2a_v03._bytes_out(raw)) == raw              # a2a-sdk (Python) 0.3
    assert a2a_v03._bytes_in("not base64!") == "not base64!"
    part = a2a_v03._proto_part_in({"file": {"fileWithBytes": a2a_v03._bytes_out(raw)}}, "p")
    assert part == {"raw": raw}


# -- 0.3 over gRPC: a2a.v1.A2AService, beside 1.0's ----------------------------------------

def _v03_grpc_server(agent=None):
    from harness import Live, need
    need("grpc", "0.3 over gRPC: the grpc extra (pip install -e '.[grpc]')")
    import a2a_grpc as grpc_mod
    srv = a2a_min.Server(agent or _file_echo, name="0.3 test agent", compat="0.3",
                         push_notifications=True, input_modes=["*/*"])
    grpc_server, port = grpc_mod.create_server(srv, "127.0.0.1:0")
    grpc_server.start()
    return grpc_server, Live(srv)


def test_the_0_3_card_lists_the_grpc_interface_too():
    grpc_server, live = _v03_grpc_server()
    try:
        import a2a_client
        card, _ = a2a_client.fetch_card(live.url)
        grpc_url = next(i["url"] for i in card["supportedInterfaces"]
                        if i["protocolBinding"] == "GRPC")
        assert {"url": grpc_url, "transport": "GRPC"} in card["additionalInterfaces"]
        assert {"url": grpc_url, "protocolBinding": "GRPC", "protocolVersion": "0.3"} in \
            card["supportedInterfaces"]
        assert card["preferredTransport"] == "JSONRPC"
    finally:
        grpc_server.stop(0)
        live.close()


def test_our_client_speaks_0_3_over_grpc_to_our_server():
    import a2a_client
    grpc_server, live = _v03_grpc_server()
    try:
        card, card_url = a2a_client.fetch_card(live.url)
        with a2a_client.Client(_v03_only(card), card_url=card_url, binding="GRPC") as client:
            task = _exercise_v03(client, [], "GRPC")
            slow = client.send("slow0.3", immediate=True)["task"]
            events = list(client.subscribe(slow["id"]))
            assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
            assert [c["id"] for c in client.list_push_configs(task["id"])["configs"]] == ["c1"]
            assert client.delete_push_config(task["id"], "c1") == {}
            with pytest.raises(a2a_min.UnsupportedOperationError):
                client.list_tasks()                  # (0.3's gRPC has no ListTasks)
        # 1.0 clients keep their own service on the same port.
        with a2a_client.Client(live.url, binding="GRPC") as client:
            assert client.interface["protocolVersion"] == "1.0"
            assert client.send("hello")["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        grpc_server.stop(0)
        live.close()


def _sdk03_has_grpc():
    done = subprocess.run([sdk03_python(), "-c", "import grpc"], capture_output=True)
    if done.returncode:
        why = "the 0.3 venv has no grpcio (pip install grpcio there)"
        if os.environ.get("A2A_REQUIRE_ALL") == "1":          # (CI: nothing skips silently)
            pytest.fail(why, pytrace=False)
        pytest.skip(why)


def test_the_sdks_0_3_grpc_client_against_our_server():
    _sdk03_has_grpc()
    grpc_server, live = _v03_grpc_server(scenario_agent)
    try:
        check_sdk_run(run_sdk(live.url, "GRPC"), live.url, "GRPC")
    finally:
        grpc_server.stop(0)
        live.close()


def test_our_client_speaks_0_3_over_grpc_to_the_sdks_0_3_server():
    import a2a_client
    pytest.importorskip("a2a_grpc")
    _sdk03_has_grpc()
    port, grpc_port = free_port(), free_port()
    proc = run_host([sdk03_python(), "tests/sdk03_server.py", str(port), f"grpc={grpc_port}"],
                    port)
    try:
        with a2a_client.Client(f"http://127.0.0.1:{port}", binding="GRPC") as client:
            assert client.url.endswith(f"127.0.0.1:{grpc_port}")
            _exercise_v03(client, [], "GRPC")
            # (a2a-sdk 0.3's gRPC server has no list and delete of push configs)
    finally:
        proc.terminate()
        proc.wait(10)


_DESCRIBE = """
import json, sys
from a2a.grpc import a2a_pb2

def fields(descriptor):
    return [[f.name, f.number, f.type, f.message_type.full_name if f.message_type else
             f.enum_type.full_name if f.enum_type else "", f.json_name,
             f.containing_oneof.name if f.containing_oneof else "",
             bool(f.is_repeated if hasattr(f, "is_repeated") else f.label == 3)] for f in descriptor.fields]
names = json.loads(sys.argv[1])
print(json.dumps({name: fields(a2a_pb2.DESCRIPTOR.message_types_by_name[name]) for name in names}))
"""


def test_the_0_3_messages_are_those_of_the_reference_sdk():
    """a2a_v03's description of the 0.3 proto (written from the 0.3
    specification) builds the same fields as the SDK's generated module:
    names, numbers, types, JSON names, oneofs, repetition."""
    grpc_mod = pytest.importorskip("a2a_grpc")
    ours = grpc_mod.v03_messages(a2a_v03)
    done = subprocess.run([sdk03_python(), "-c", _DESCRIBE, json.dumps(sorted(
        a2a_v03.PROTO_MESSAGES))], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout)
    for name in a2a_v03.PROTO_MESSAGES:
        mine = [[f.name, f.number, f.type, f.message_type.full_name if f.message_type else
                 f.enum_type.full_name if f.enum_type else "", f.json_name,
                 f.containing_oneof.name if f.containing_oneof else "",
                 bool(f.is_repeated if hasattr(f, "is_repeated") else f.label == 3)]
                for f in ours[name].DESCRIPTOR.fields]
        assert mine == theirs[name], name
