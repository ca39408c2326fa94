"""The WSGI and ASGI adapters: under wsgiref.validate in-process, and under real
gunicorn and uvicorn servers on 127.0.0.1; the Lambda handler behind its local
runner; single-path mode; and the protocol's sections importing no host's
module. Our own servers have modules of their own: test_http_server.py (the
threaded one) and test_asyncio_server.py."""

import http.client
import io
import json
import os
import sys
import wsgiref.util
import wsgiref.validate

import a2a_min
from harness import (exercise, free_port, need, parse_sse, rpc_body, run_host,
                     scenario_agent, user_message)

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def wsgi_call(app, method, path, body=b"", query="", headers=None):
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SCRIPT_NAME": "",
               "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body))}
    wsgiref.util.setup_testing_defaults(environ)
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        environ[key if key == "CONTENT_TYPE" else "HTTP_" + key] = value
    got = {}

    def start_response(status, response_headers, exc_info=None):
        got["status"], got["headers"] = status, dict(response_headers)
        return lambda data: None

    result = wsgiref.validate.validator(app)(environ, start_response)
    try:
        data = b"".join(result)
    finally:
        result.close()
    return int(got["status"].split()[0]), got["headers"], data


def test_wsgi_under_validator():
    app = a2a_min.wsgi_app(a2a_min.Server(scenario_agent))
    status, headers, data = wsgi_call(app, "GET", "/.well-known/agent-card.json")
    assert status == 200 and json.loads(data)["supportedInterfaces"][0]["url"] == \
        "http://127.0.0.1/"
    status, _, data = wsgi_call(app, "POST", "/", rpc_body(
        "SendMessage", {"message": user_message("hi")}), headers=HEADERS)
    task = json.loads(data)["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    status, headers, data = wsgi_call(app, "POST", "/message:stream", json.dumps(
        {"message": user_message("chunks")}).encode(), headers=HEADERS)
    events = parse_sse(data)
    assert headers["Content-Type"] == "text/event-stream"
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    status, _, data = wsgi_call(app, "GET", f"/tasks/{task['id']}", headers=HEADERS)
    assert status == 200 and json.loads(data)["id"] == task["id"]
    status, _, data = wsgi_call(app, "GET", "/nope/nothing/here", headers=HEADERS)
    assert status == 404 and json.loads(data)["error"]["code"] == 404


def test_wsgi_mount_prefix_and_body_limit():
    app = a2a_min.wsgi_app(a2a_min.Server(scenario_agent, max_body_bytes=100))
    environ_prefix = {"SCRIPT_NAME": "/a2a"}
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/.well-known/agent-card.json",
               **environ_prefix}
    wsgiref.util.setup_testing_defaults(environ)
    got = {}
    body = b"".join(app(environ, lambda s, h, e=None: got.update(status=s)))
    assert json.loads(body)["supportedInterfaces"][0]["url"] == "http://127.0.0.1/a2a/"
    status, _, data = wsgi_call(app, "POST", "/", b"x" * 500, headers=HEADERS)
    assert status == 413


def test_under_gunicorn():
    need("gunicorn", "needs gunicorn (test extra)")
    port = free_port()
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    proc = run_host([gunicorn if os.path.exists(gunicorn) else "gunicorn", "-k", "gthread",
                     "--threads", "8", "-b", f"127.0.0.1:{port}", "examples.wsgi_app:app"], port)
    try:
        exercise(port)
    finally:
        proc.terminate()
        proc.wait(10)


def test_under_uvicorn():
    need("uvicorn", "needs uvicorn (test extra)")
    port = free_port()
    proc = run_host([sys.executable, "-m", "uvicorn", "examples.asgi_app:app",
                     "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"], port)
    try:
        exercise(port)
    finally:
        proc.terminate()
        proc.wait(10)


def asgi_call(app, scope):
    import asyncio
    sent = []

    async def receive():
        if "_received" in scope:                   # like a server: the next message is
            await asyncio.Future()                 # the disconnect, when the client leaves
        scope["_received"] = True
        return {"type": "http.request", "body": scope.pop("_body", b""), "more_body": False}

    async def send(message):
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def test_asgi_mounted_under_a_prefix_and_lifespan():
    import asyncio
    # (A name of a host it runs on is named: see test_who_may_call.py.)
    app = a2a_min.asgi_app(a2a_min.Server(scenario_agent, allowed_hosts=["example.test"]))
    scope = {"type": "http", "method": "GET", "root_path": "/a2a",
             "path": "/a2a/.well-known/agent-card.json",
             "raw_path": b"/a2a/.well-known/agent-card.json", "query_string": b"",
             "headers": [(b"host", b"example.test:8080")], "scheme": "https"}
    sent = asgi_call(app, scope)
    assert sent[0]["status"] == 200
    card = json.loads(sent[1]["body"])
    assert card["supportedInterfaces"][0]["url"] == "https://example.test:8080/a2a/"
    body = json.dumps({"message": user_message("chunks")}).encode()
    sent = asgi_call(app, {"type": "http", "method": "POST", "root_path": "/a2a",
                           "path": "/a2a/message:stream", "raw_path": b"/a2a/message:stream",
                           "query_string": b"", "_body": body,
                           "headers": [(b"a2a-version", b"1.0"),
                                       (b"content-type", b"application/json")]})
    chunks = [m for m in sent if m["type"] == "http.response.body"]
    assert all(m.get("more_body") for m in chunks[:-1]) and not chunks[-1].get("more_body")
    events = parse_sse(b"".join(m["body"] for m in chunks))
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    replies = []

    async def receive():
        return next(messages)

    async def send(message):
        replies.append(message["type"])

    server = a2a_min.Server(scenario_agent)
    app = a2a_min.asgi_app(server, grace=1.0)
    asyncio.run(app({"type": "lifespan"}, receive, send))
    assert replies == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert server.closing.is_set()            # the lifespan shutdown stopped the server


def test_single_path_mode():
    """Everything on one path (AWS Bedrock AgentCore routes only POST /invocations)."""
    server = a2a_min.Server(scenario_agent, single_path="/invocations")
    card = json.loads(server.handle_http("GET", "/invocations", "", {}, b"",
                                         base_url="http://h:1").body)
    assert card["supportedInterfaces"] == [
        {"url": "http://h:1/invocations", "protocolBinding": "JSONRPC", "protocolVersion": v}
        for v in ("1.0", "1.1")]
    assert server.handle_http("GET", "/invocations/.well-known/agent-card.json").status == 200
    resp = server.handle_http("POST", "/invocations", "", {"a2a-version": "1.0", "content-type": "application/json"}, rpc_body(
        "SendMessage", {"message": user_message("hi")}))
    assert json.loads(resp.body)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for path in ("/", "/message:send", "/.well-known/agent-card.json"):
        resp = server.handle_http("GET", path, "", {"a2a-version": "1.0"}, b"")
        assert resp.status == 404 and "/invocations" in json.loads(resp.body)["error"]["message"]


def test_lambda_behind_the_local_runner():
    port = free_port()
    proc = run_host([sys.executable, "examples/lambda_local.py", str(port)], port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/.well-known/agent-card.json")
        card = json.loads(conn.getresponse().read())
        assert card["supportedInterfaces"][0]["url"] == f"http://127.0.0.1:{port}/"
        exercise(port)
    finally:
        proc.terminate()
        proc.wait(10)
