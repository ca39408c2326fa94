"""The first ten minutes of a new user: what the demo, serve() and the bundled
hosts say and do before anyone reads the docs (issue 19's friction list)."""

import http.client
import json
import logging
import re
import socket
import subprocess
import sys
import time

import pytest

from harness import ROOT, Live, free_port, rpc_body, user_message, V1
import a2a_min


def answer(server, method, path, body=b"", headers=V1):
    return server.handle_http(method, path, "", headers, body, "http://127.0.0.1:8000")


# -- JSON answers end with a newline ---------------------------------------------------------

def test_every_json_answer_ends_with_a_newline():
    server = a2a_min.demo_server()
    sent = answer(server, "POST", "/", rpc_body("SendMessage", {"message": user_message("hi")}))
    task_id = json.loads(sent.body)["result"]["task"]["id"]
    bodies = {
        "JSON-RPC result (a stored task, spliced)": sent.body,
        "JSON-RPC result (encoded)": answer(server, "POST", "/", rpc_body("ListTasks", {})).body,
        "JSON-RPC error": answer(server, "POST", "/", rpc_body("GetTask", {"id": "nope"})).body,
        "JSON-RPC parse error": answer(server, "POST", "/", b"{").body,
        "HTTP+JSON result (spliced)": answer(server, "GET", f"/tasks/{task_id}").body,
        "HTTP+JSON result (encoded)": answer(server, "GET", "/tasks").body,
        "HTTP+JSON error": answer(server, "GET", "/tasks/nope").body,
        "the card": answer(server, "GET", "/.well-known/agent-card.json", headers={}).body,
    }
    both = a2a_min.demo_server(compat="0.3")
    bodies["A2A 0.3 JSON-RPC result"] = answer(both, "POST", "/", json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "messageId": "m", "role": "user",
            "parts": [{"kind": "text", "text": "hi"}]}}}).encode(), {}).body
    bodies["A2A 0.3 HTTP+JSON error"] = answer(both, "GET", "/v1/tasks/nope", b"", {}).body
    for what, body in bodies.items():
        assert body.endswith(b"}\n") and body.count(b"\n") == 1, (what, body[-40:])
        json.loads(body)


def test_stream_frames_are_unchanged():
    server = a2a_min.demo_server()
    response = answer(server, "POST", "/", rpc_body("SendStreamingMessage",
                                                    {"message": user_message("hi")}))
    frames = b"".join(response.stream).split(b"\n\n")
    assert all(re.fullmatch(rb"id: \d+\ndata: \{.*\}", f) for f in frames if f), frames[:2]


# -- reason phrases ------------------------------------------------------------------------

def test_every_status_the_server_sends_has_its_reason_phrase():
    statuses = {cls.http_status for cls in vars(a2a_min).values()
                if isinstance(cls, type) and issubclass(cls, a2a_min.A2AError)}
    statuses |= {200, 204, 304, 405, 408, 411, 414, 431, 501}
    assert statuses <= set(a2a_min._HTTP_REASONS), statuses - set(a2a_min._HTTP_REASONS)
    assert a2a_min._HTTP_REASONS[401] == "Unauthorized"


@pytest.mark.parametrize("host", ["threads", "asyncio"])
def test_401_says_unauthorized_on_a_real_socket(host):
    port = free_port()
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); import a2a_min, asyncio\n"
            f"s = a2a_min.demo_server(authenticate=a2a_min.BearerAuth({{'t': 'alice'}}))\n"
            + (f"asyncio.run(a2a_min.serve_asyncio(s, '127.0.0.1', {port}))" if host == "asyncio"
               else f"a2a_min.serve(s, '127.0.0.1', {port})"))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == f"a2a_min: serving on http://127.0.0.1:{port}/ " \
                                         "(Ctrl-C stops)\n"      # (serve() says where)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/tasks", headers={"A2A-Version": "1.0"})
        response = conn.getresponse()
        assert (response.status, response.reason) == (401, "Unauthorized")
        assert response.read().endswith(b"\n")
    finally:
        proc.terminate()
        proc.wait(10)


# -- the access log ------------------------------------------------------------------------

def test_the_access_log_is_off_by_default_and_a_line_a_request_when_on(caplog):
    caplog.set_level(logging.INFO, logger="a2a_min.access")
    quiet = Live(a2a_min.demo_server(), timeout=5)
    try:
        quiet.rpc("ListTasks")
    finally:
        quiet.close()
    assert not [r for r in caplog.records if r.name == "a2a_min.access"]
    live = Live(a2a_min.demo_server(access_log=True), timeout=5)
    try:
        live.rpc("SendMessage", {"message": user_message("hi")})
        live.request("GET", "/tasks?pageSize=1", headers={"A2A-Version": "1.0"})
        live.request("GET", "/tasks/nope", headers={"A2A-Version": "1.0"})
    finally:
        live.close()
    lines = [r.getMessage() for r in caplog.records if r.name == "a2a_min.access"]
    assert len(lines) == 3, lines
    # (a trace is named when the request came with one or sent one on: these did neither)
    assert re.fullmatch(r'127\.0\.0\.1 "POST /" 200 \d+ \d+\.\dms', lines[0]), lines[0]
    assert lines[1].startswith('127.0.0.1 "GET /tasks?pageSize=1" 200 ') and "trace" not in \
        lines[1]
    assert lines[2].startswith('127.0.0.1 "GET /tasks/nope" 404 ')


def test_the_access_log_on_an_event_loop_logs_the_final_status(caplog):
    """On an event loop a turn's answer comes later (Response.pending): its
    line is written when it is known."""
    import asyncio
    caplog.set_level(logging.INFO, logger="a2a_min.access")

    async def slow(text):
        await asyncio.sleep(0.05)
        return text

    async def main():
        server = a2a_min.Server(slow, access_log=True)
        port = free_port()
        serving = asyncio.ensure_future(a2a_min.serve_asyncio(server, "127.0.0.1", port,
                                                              on_ready=lambda _: None))
        await asyncio.sleep(0.2)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        body = rpc_body("SendMessage", {"message": user_message("later")})
        writer.write(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        head = await reader.readuntil(b"\r\n\r\n")
        writer.close()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)
        return head

    assert asyncio.run(main()).startswith(b"HTTP/1.1 200 OK")
    lines = [r.getMessage() for r in caplog.records if r.name == "a2a_min.access"]
    assert len(lines) == 1 and re.search(r'"POST /" 200 \d+ ', lines[0]), lines


# -- the demo's command line ---------------------------------------------------------------

def test_plain_http_on_the_tls_port_gets_a_whole_answer():
    assert a2a_min._PLAIN_ON_TLS.split(b"\r\n\r\n", 1)[1] == a2a_min._PLAIN_ON_TLS_TEXT
    assert b"Content-Length: %d\r\n" % len(a2a_min._PLAIN_ON_TLS_TEXT) in a2a_min._PLAIN_ON_TLS


def test_a_busy_port_is_one_line_naming_port():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for argv in (["a2a_min.py"], ["a2a_min.py", "--server", "asyncio"]):
            done = subprocess.run([sys.executable, *argv, "--port", str(port)], cwd=ROOT,
                                  capture_output=True, text=True, timeout=30)
            assert done.returncode == 1 and done.stdout == ""
            assert done.stderr.count("\n") == 1, done.stderr
            assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr


def test_push_allow_lets_the_demo_deliver_to_the_webhook_receiver():
    """The two commands of the README: the receiver, and the demo with
    --push-allow 127.0.0.1; then a message naming the receiver."""
    hook_port, port = free_port(), free_port()
    receiver = subprocess.Popen([sys.executable, "examples/webhook_receiver.py", str(hook_port)],
                                cwd=ROOT, stdout=subprocess.PIPE, text=True)
    demo = subprocess.Popen([sys.executable, "a2a_min.py", "--port", str(port),
                             "--push-allow", "127.0.0.1"], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert "webhook receiver" in receiver.stdout.readline()
        first = demo.stdout.readline()
        assert "webhooks to 127.0.0.1 allowed" in first, first
        card = json.loads(_get(port, "/.well-known/agent-card.json"))
        assert card["capabilities"]["pushNotifications"] is True
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/message:send", json.dumps({
            "message": user_message("hi"), "configuration": {"taskPushNotificationConfig": {
                "url": f"http://127.0.0.1:{hook_port}/hook", "token": "t1"}}}), V1)
        assert conn.getresponse().status == 200
        lines, deadline = [], time.monotonic() + 10
        while time.monotonic() < deadline and not any("TASK_STATE_COMPLETED" in l for l in lines):
            lines.append(receiver.stdout.readline())
        text = "".join(lines)
        assert "--- POST /hook" in text and "X-A2A-Notification-Token: t1" in text
        assert "TASK_STATE_COMPLETED" in text
    finally:
        for proc in (receiver, demo):
            proc.terminate()
            proc.wait(10)


def _get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    return conn.getresponse().read()


def test_without_push_allow_the_demo_still_sends_no_webhooks():
    server = a2a_min.demo_server()
    assert server.agent_card("http://x")["capabilities"].get("pushNotifications") is not True


# -- a 0.3 path on a 1.0-only server -------------------------------------------------------

def test_a_v1_path_without_a_version_says_it_is_0_3_and_how_to_fix_it():
    server = a2a_min.demo_server()
    body = json.dumps({"message": user_message("hi")}).encode()
    refused = answer(server, "POST", "/v1/message:send", body,
                     {"content-type": "application/json"})
    error = json.loads(refused.body)["error"]
    assert refused.status == 400 and error["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    assert "A2A 0.3 route" in error["message"] and "POST /message:send" in error["message"]
    assert "--compat 0.3" in error["message"]
    # With the 1.0 header it is the tenant "v1", as the specification says.
    tenant = answer(server, "POST", "/v1/message:send", body)
    assert tenant.status == 200
    assert json.loads(answer(server, "GET", "/v1/tasks").body)["totalSize"] == 1
    assert json.loads(answer(server, "GET", "/tasks").body)["totalSize"] == 0


# -- the gRPC companion without its extra --------------------------------------------------

def test_a2a_grpc_without_grpc_names_the_extra():
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['grpc'] = None; "
                           "import a2a_grpc"], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: a2a_grpc needs the gRPC extra") and "'.[grpc]'" in last
    # Run as a command, it is one line and no traceback.
    done = subprocess.run([sys.executable, "-c", "import sys, runpy; sys.modules['grpc'] = None; "
                           "sys.argv = ['a2a_grpc.py']; runpy.run_path('a2a_grpc.py')"],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and done.stderr.startswith("a2a_grpc needs the gRPC extra")
    assert done.stderr.count("\n") == 1, done.stderr
