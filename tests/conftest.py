"""Shared fixtures: servers in-process and on real loopback sockets."""

import http.client
import json
import os
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import a2a_min  # noqa: E402

V1 = {"a2a-version": "1.0", "content-type": "application/json"}


def scenario_agent(ctx):
    """The agent most tests talk to; the text of the message picks a behaviour."""
    text = ctx.text
    if text == "wait":                         # interrupted: needs more input
        yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more")
    elif text == "direct":
        yield a2a_min.agent_message("a direct reply")
    elif text == "boom":
        raise ValueError("secret internal detail")
    elif text == "refuse":
        raise a2a_min.UnsupportedOperationError("this agent refuses that")
    elif text.startswith("slow"):              # works until canceled (or 5 s)
        yield a2a_min.status_update("TASK_STATE_WORKING")
        ctx.cancelled.wait(float(text[4:] or 5))
        yield "finished slowly"
    elif text == "ticks":                      # many short steps, 0.6 s in all
        yield a2a_min.status_update("TASK_STATE_WORKING")
        for _ in range(12):
            time.sleep(0.05)
            yield None
        yield "ticked"
    elif text == "chunks":
        yield a2a_min.status_update("TASK_STATE_WORKING")
        yield "one "
        yield "two "
        yield "three"
    else:
        yield a2a_min.status_update("TASK_STATE_WORKING")
        yield "echo: " + text


class Client:
    """JSON-RPC over a Server's handle_http(), no sockets."""

    def __init__(self, server):
        self.server = server
        self.ids = iter(range(1, 1 << 30))

    def raw(self, body, headers=V1, query=""):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        return self.server.handle_http("POST", "/", query, dict(headers), body)

    def call(self, method, params=None, headers=V1, query=""):
        """The JSON-RPC response object (dict) of a unary call."""
        resp = self.raw({"jsonrpc": "2.0", "id": next(self.ids), "method": method,
                         "params": params or {}}, headers, query)
        assert resp.stream is None, "expected a unary answer"
        return json.loads(resp.body)

    def result(self, method, params=None, **kw):
        answer = self.call(method, params, **kw)
        assert "result" in answer, answer
        return answer["result"]

    def error(self, method, params=None, **kw):
        answer = self.call(method, params, **kw)
        assert "error" in answer, answer
        return answer["error"]

    def stream(self, method, params, headers=V1, query=""):
        """(id, JSON-RPC response) pairs of an SSE answer."""
        resp = self.raw({"jsonrpc": "2.0", "id": "s", "method": method, "params": params},
                        headers, query)
        if resp.stream is None:
            return json.loads(resp.body)
        return parse_sse(b"".join(resp.stream))

    def send(self, text, **params):
        return self.result("SendMessage", {"message": user_message(text), **params})


def parse_sse(data):
    events = []
    for block in data.decode().split("\n\n"):
        if not block.strip() or block.startswith(":"):
            continue
        event_id, payload = None, None
        for line in block.split("\n"):
            if line.startswith("id: "):
                event_id = int(line[4:])
            elif line.startswith("data: "):
                payload = json.loads(line[6:])
        events.append((event_id, payload))
    return events


_counter = iter(range(1, 1 << 30))


def user_message(text, **fields):
    return {"messageId": f"m-{next(_counter)}", "role": "ROLE_USER",
            "parts": [{"text": text}], **fields}


@pytest.fixture
def server():
    return a2a_min.Server(scenario_agent, name="Test agent", description="For tests.")


@pytest.fixture
def client(server):
    return Client(server)


class Live:
    """A Server behind the http.server adapter on 127.0.0.1, port chosen by the OS."""

    def __init__(self, server, **options):
        self.server = server
        self.httpd = a2a_min.make_http_server(server, "127.0.0.1", 0, **options)
        self.host, self.port = self.httpd.server_address[:2]
        self.url = f"http://{self.host}:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def connection(self, timeout=10):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, conn=None):
        own = conn is None
        conn = conn or self.connection()
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        if own:
            conn.close()
        return resp, data

    def rpc(self, method, params=None, conn=None, headers=None):
        resp, data = self.request("POST", "/", {"jsonrpc": "2.0", "id": 1, "method": method,
                                                "params": params or {}},
                                  headers or {"A2A-Version": "1.0",
                                              "Content-Type": "application/json"}, conn)
        return json.loads(data)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def live(server):
    running = Live(server, timeout=3)
    yield running
    running.close()
