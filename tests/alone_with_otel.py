"""a2a_min.py copied alone into a folder, in a process that imported
OpenTelemetry first (as many LLM and web libraries do); run there by
tests/test_alone.py. Each host serves one default Server: prints, as JSON,
what the card and a SendMessage answered on each (or the error met), and
the modules of a2a and OpenTelemetry's trace loaded."""

import opentelemetry.trace  # noqa: F401  (what else the process imported: nothing to a2a_min)

import asyncio  # noqa: E402
import base64  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from wsgiref.simple_server import WSGIRequestHandler, make_server  # noqa: E402

import a2a_min  # noqa: E402

server = a2a_min.Server(lambda ctx: ctx.upper(), name="alone")
HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}
SEND = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
    "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}).encode()
CARD = "/.well-known/agent-card.json"


def seen(card, answer):
    """(the card's name, the SendMessage's text) from the two bodies."""
    task = json.loads(answer)["result"]["task"]
    return [json.loads(card)["name"], task["artifacts"][0]["parts"][0]["text"]]


def over_http(port):
    bodies = []
    for method, path, body in (("GET", CARD, None), ("POST", "/", SEND)):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=HEADERS)
            bodies.append(conn.getresponse().read())
        finally:
            conn.close()
    return seen(*bodies)


def in_process():
    return seen(server.handle_http("GET", CARD, "", {}).body,
                server.handle_http("POST", "/", "", {k.lower(): v for k, v in HEADERS.items()},
                                   SEND).body)


def served(httpd):
    """over_http() against ``httpd`` (socketserver's kind), served on a thread meanwhile."""
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        return over_http(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()


def threads():
    return served(a2a_min.make_http_server(server, "127.0.0.1", 0))


def on_asyncio():
    ready, box = threading.Event(), {}

    def run():
        loop = box["loop"] = asyncio.new_event_loop()
        def on_ready(listener):
            box["port"] = listener.sockets[0].getsockname()[1]
            ready.set()
        box["task"] = loop.create_task(a2a_min.serve_asyncio(server, "127.0.0.1", 0, grace=0,
                                                             on_ready=on_ready))
        try:
            loop.run_until_complete(box["task"])
        except asyncio.CancelledError:
            pass
        loop.close()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        return over_http(box["port"])
    finally:
        box["loop"].call_soon_threadsafe(box["task"].cancel)
        thread.join(10)


def wsgi():
    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass
    return served(make_server("127.0.0.1", 0, a2a_min.wsgi_app(server), handler_class=Quiet))


def asgi():
    import uvicorn
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    host = uvicorn.Server(uvicorn.Config(a2a_min.asgi_app(server), host="127.0.0.1", port=port,
                                         log_level="warning", lifespan="on"))
    thread = threading.Thread(target=host.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not host.started and time.monotonic() < deadline:   # (a hang guard only)
        time.sleep(0.01)
    try:
        return over_http(port)
    finally:
        host.should_exit = True
        thread.join(10)


def on_lambda():
    handler = a2a_min.lambda_handler(server)

    class Context:
        def get_remaining_time_in_millis(self):
            return 60_000

    def event(method, path, body):
        return {"version": "2.0", "rawPath": path, "rawQueryString": "",
                "headers": {**HEADERS, "host": "lambda.test"},
                "requestContext": {"http": {"method": method, "path": path}, "stage": "$default"},
                "body": base64.b64encode(body).decode(), "isBase64Encoded": True}
    bodies = []
    for method, path, body in (("GET", CARD, b""), ("POST", "/", SEND)):
        answer = handler(event(method, path, body), Context())
        bodies.append(base64.b64decode(answer["body"]) if answer["isBase64Encoded"]
                      else answer["body"].encode())
    return seen(*bodies)


found = {}
for name, host in (("in process", in_process), ("threads", threads), ("asyncio", on_asyncio),
                   ("wsgi", wsgi), ("asgi", asgi), ("lambda", on_lambda)):
    try:
        found[name] = host()
    except Exception as error:          # (what the test shows: which host failed, and how)
        found[name] = f"{type(error).__name__}: {error}"
found["modules"] = sorted(m for m in sys.modules
                          if m.startswith("a2a") or m == "opentelemetry.trace")
print(json.dumps(found))
