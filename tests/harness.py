"""The test harness: the scenario agent, clients that send the same calls over
every binding and host (in-process JSON-RPC, HTTP+JSON, gRPC, and real sockets
to the threaded and asyncio servers, WSGI, ASGI and Lambda), the running server
behind them (Live), and helpers to build and read messages. conftest.py turns
these into fixtures; test modules import what they use from here."""

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import urllib.parse
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import a2a_min  # noqa: E402

# The in-memory store, kept here before conftest may put SQLite in its place
# (A2A_TEST_STORE=sqlite): for the tests that need the one kept in memory.
MemoryTaskStore = a2a_min.TaskStore

V1 = {"a2a-version": "1.0", "content-type": "application/json"}


def have(what):
    """Whether ``what`` is here: a path (when it holds a slash), else a module
    this Python can import, else a program beside this Python or on PATH."""
    import importlib.util
    import shutil
    if os.sep in what:
        return os.path.exists(what)
    try:
        if importlib.util.find_spec(what) is not None:
            return True
    except (ImportError, ValueError):
        pass
    return os.path.exists(os.path.join(os.path.dirname(sys.executable), what)) or \
        shutil.which(what) is not None


def need(what, why):
    """Go on if ``what`` (see have()) is here; if not, skip saying ``why``, or,
    with A2A_REQUIRE_ALL=1 in the environment (as CI sets once it has installed
    the test extra and the tools), fail: there nothing may skip silently. In a
    test, a fixture, or at the top of a module."""
    if have(what):
        return
    if os.environ.get("A2A_REQUIRE_ALL") == "1":
        pytest.fail(f"{what} is required (A2A_REQUIRE_ALL=1): {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)


def require_sdk():
    """Skip unless the reference SDK (test extra) is installed. Never import it
    here: its generated lf.a2a.v1 module must not share this process with ours
    (a2a_min_pb2); tests run it in subprocesses."""
    import importlib.util
    if importlib.util.find_spec("a2a") is None:
        pytest.skip("needs the test extra (a2a-sdk, the reference SDK)")


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


# reason -> JSON-RPC code, so that both bindings' errors read the same in tests
def _error_codes():
    codes, todo = {}, [a2a_min.A2AError]
    while todo:
        cls = todo.pop()
        codes.setdefault(cls.reason, cls.code)
        todo += cls.__subclasses__()
    return codes


ERROR_CODES = _error_codes()


class RestClient(Client):
    """The same calls over the HTTP+JSON binding: method + params become a REST
    request (route from a2a_min.ROUTES), and answers are reshaped like JSON-RPC
    responses, so one test checks both bindings. ``error["httpStatus"]`` keeps
    the HTTP status; ``error["code"]`` is the JSON-RPC code of the error's reason.
    """

    def request_for(self, method, params, query=""):
        verb, pattern = next((v, p) for v, p, m in a2a_min.ROUTES if m == method)
        params = dict(params or {})
        path = pattern
        for name in ("taskId", "id"):
            if "{" + name + "}" in path:
                path = path.replace("{" + name + "}", urllib.parse.quote(str(params.pop(name, "")), safe=""))
        if params.get("tenant"):
            path = "/" + urllib.parse.quote(params.pop("tenant"), safe="") + path
        body = b""
        if verb == "GET" or verb == "DELETE":
            pairs = [(k, str(v).lower() if isinstance(v, bool) else str(v)) for k, v in params.items()]
            query = "&".join(filter(None, [urllib.parse.urlencode(pairs), query]))
        else:
            body = json.dumps(params).encode()
        return verb, path, query, body

    def _send(self, method, params, headers, query):
        verb, path, query, body = self.request_for(method, params, query)
        return self.server.handle_http(verb, path, query, dict(headers), body)

    @staticmethod
    def _as_jsonrpc_error(resp):
        error = json.loads(resp.body)["error"]
        reason = next((d["reason"] for d in error.get("details", ()) if "reason" in d), None)
        assert error["code"] == resp.status
        return {"code": ERROR_CODES.get(reason), "message": error["message"],
                "data": error.get("details", []), "httpStatus": resp.status,
                "status": error["status"]}

    def call(self, method, params=None, headers=V1, query=""):
        resp = self._send(method, params, headers, query)
        assert resp.stream is None, "expected a unary answer"
        if resp.status != 200:
            return {"jsonrpc": "2.0", "id": None, "error": self._as_jsonrpc_error(resp)}
        return {"jsonrpc": "2.0", "id": None, "result": json.loads(resp.body)}

    def stream(self, method, params, headers=V1, query=""):
        resp = self._send(method, params, headers, query)
        if resp.stream is None:
            return {"error": self._as_jsonrpc_error(resp)}
        out = []
        for event_id, payload in parse_sse(b"".join(resp.stream)):
            if "error" in payload:
                reason = next(d["reason"] for d in payload["error"]["details"] if "reason" in d)
                out.append((event_id, {"error": {**payload["error"], "code": ERROR_CODES[reason]}}))
            else:
                out.append((event_id, {"result": payload}))
        return out


class GrpcClient(Client):
    """The same calls over the gRPC binding, on a real channel to a real
    grpc.Server on 127.0.0.1 (a2a_grpc.create_server). Answers and errors are
    reshaped like JSON-RPC's; ``error["grpcStatus"]`` keeps the status name."""

    def __init__(self, server):
        import grpc
        import a2a_grpc
        import a2a_min_pb2
        super().__init__(server)
        self.grpc, self.pb = grpc, a2a_min_pb2
        self.grpc_server, port = a2a_grpc.create_server(server, "127.0.0.1:0")
        self.grpc_server.start()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")

    def close(self):
        self.channel.close()
        self.grpc_server.stop(0)

    def _rpc(self, method, params, headers):
        from google.protobuf import empty_pb2, json_format
        request_name, response_name, streams = a2a_min.METHODS[method]
        try:
            request = json_format.ParseDict(params or {}, getattr(self.pb, request_name)())
        except json_format.ParseError as exc:
            pytest.skip(f"not expressible as a protobuf message: {exc}")
        response_class = empty_pb2.Empty if response_name == "google.protobuf.Empty" \
            else getattr(self.pb, response_name)
        make = self.channel.unary_stream if streams else self.channel.unary_unary
        stub = make(f"/lf.a2a.v1.A2AService/{method}",
                    request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=response_class.FromString)
        metadata = [(k, v) for k, v in headers.items() if k not in ("content-type",)]
        return stub(request, metadata=metadata, timeout=30)

    def _as_jsonrpc_error(self, exc):
        from google.protobuf import json_format
        from google.rpc import error_details_pb2, status_pb2  # noqa: F401
        trailer = dict(exc.trailing_metadata() or ())["grpc-status-details-bin"]
        status = json_format.MessageToDict(status_pb2.Status.FromString(trailer))
        reason = next(d["reason"] for d in status["details"] if "reason" in d)
        assert status["code"] == exc.code().value[0] and status["message"] == exc.details()
        return {"code": ERROR_CODES.get(reason), "message": exc.details(),
                "data": status["details"], "grpcStatus": exc.code().name}

    @staticmethod
    def _to_dict(message):
        from google.protobuf import json_format
        out = json_format.MessageToDict(message)
        if message.DESCRIPTOR.name == "ListTasksResponse":   # required, even when empty
            out.setdefault("tasks", [])
            out.setdefault("nextPageToken", "")
            out.setdefault("pageSize", 0)
            out.setdefault("totalSize", 0)
        return out

    def call(self, method, params=None, headers=V1, query=""):
        headers = dict(headers)
        if query:
            headers.update(urllib.parse.parse_qsl(query))
            headers = {k.lower(): v for k, v in headers.items()}
        try:
            answer = self._rpc(method, params, headers)
        except self.grpc.RpcError as exc:
            return {"jsonrpc": "2.0", "id": None, "error": self._as_jsonrpc_error(exc)}
        return {"jsonrpc": "2.0", "id": None, "result": self._to_dict(answer)}

    def stream(self, method, params, headers=V1, query=""):
        out = []
        try:
            for event in self._rpc(method, params, dict(headers)):
                out.append((None, {"result": self._to_dict(event)}))
        except self.grpc.RpcError as exc:
            if not out:
                return {"error": self._as_jsonrpc_error(exc)}
            out.append((None, {"error": self._as_jsonrpc_error(exc)}))
        return out


def parse_sse(data):
    events = []
    for block in data.decode().split("\n\n"):
        lines = [line for line in block.split("\n") if not line.startswith(":")]  # (comments)
        if not any(line.strip() for line in lines):
            continue
        event_id, payload = None, None
        for line in lines:
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


def rpc(server, method, params, peer="10.0.0.1", headers=V1):
    """A JSON-RPC call through server.handle_http(), as from the client at ``peer``
    (what a store's per-caller share counts); the Response as it is."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                      ensure_ascii=True).encode()
    return server.handle_http("POST", "/", "", dict(headers), body, peer=peer)


def answer(response):
    """The JSON-RPC response object of an rpc() call."""
    return json.loads(response.body)


class HostClient(Client):
    """JSON-RPC through a real host: the same calls, sent over a socket to the
    Server running under one of the adapters (subclasses start the host)."""

    def start(self):
        raise NotImplementedError

    def __init__(self, server):
        super().__init__(server)
        self.port = self.start()

    tls = None                                     # TLS hosts: the server's tls= files

    def connection(self, timeout=30):
        """A connection to the host (HTTPS for a TLS host, trusting its CA)."""
        if self.tls is None:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        import ssl
        return http.client.HTTPSConnection(
            "127.0.0.1", self.port, timeout=timeout,
            context=ssl.create_default_context(cafile=self.tls["ca"]))

    def raw(self, body, headers=V1, query=""):
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        conn = self.connection()
        try:
            conn.request("POST", "/" + ("?" + query if query else ""), body=body,
                         headers=dict(headers))
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        stream = [data] if resp.getheader("Content-Type") == "text/event-stream" else None
        return a2a_min.Response(resp.status, resp.getheaders(), data, stream)


class ThreadsHostClient(HostClient):
    def start(self):
        self.host = Live(self.server, timeout=5, **_tls_option(self.tls))
        return self.host.port

    def close(self):
        self.host.close()


class AsyncioHostClient(HostClient):
    timeout = 5.0                                  # the server's idle and head timeout

    def start(self):
        import asyncio
        ready = threading.Event()
        box = {}

        def run():
            loop = asyncio.new_event_loop()
            box["loop"] = loop

            def on_ready(listener):
                box["port"] = listener.sockets[0].getsockname()[1]
                ready.set()
            box["task"] = loop.create_task(a2a_min.serve_asyncio(
                self.server, "127.0.0.1", 0, timeout=self.timeout, on_ready=on_ready,
                grace=0, **_tls_option(self.tls)))
            try:
                loop.run_until_complete(box["task"])
            except BaseException:
                pass
            loop.run_until_complete(asyncio.sleep(0.05))   # let closed transports finish
            loop.close()
        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(10)
        self.box = box
        return box["port"]

    def close(self):
        self.box["loop"].call_soon_threadsafe(self.box["task"].cancel)
        self.thread.join(5)


def suite_pki():
    """A throw-away CA and a certificate it issued for 127.0.0.1 (the openssl
    command), made once per test process: {"ca", "cert", "key"} file names."""
    found = _PKI.get("files")
    if found is None:
        need("openssl", "the TLS hosts need the openssl command for their certificates")
        import tempfile
        folder = tempfile.mkdtemp(prefix="a2a-pki-")

        def run(*args):
            subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True,
                           timeout=60)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=a2a_min suite CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
        with open(os.path.join(folder, "server.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext")
        found = _PKI["files"] = {"ca": os.path.join(folder, "ca.pem"),
                                 "cert": os.path.join(folder, "server.pem"),
                                 "key": os.path.join(folder, "server.key")}
    return found


_PKI = {}       # (the suite's one throw-away CA: suite_pki())


def _tls_option(tls):
    """serve()'s tls=: an ssl.SSLContext of the suite's certificate, made here
    as an application would (a2a_min.py alone takes one; tls= as file names is
    a2a_cli.py's, tested in test_tls.py)."""
    if not tls:
        return {}
    import ssl
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls["cert"], tls["key"])
    return {"tls": context}


class ThreadsTlsHostClient(ThreadsHostClient):
    """The threaded server over HTTPS."""

    def start(self):
        self.tls = suite_pki()
        return super().start()


class AsyncioTlsHostClient(AsyncioHostClient):
    """The asyncio server over HTTPS."""

    def start(self):
        self.tls = suite_pki()
        return super().start()


class WsgiHostClient(HostClient):
    """wsgi_app under the standard library's WSGI server, one thread per request."""

    def start(self):
        import socketserver
        from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

        class Quiet(WSGIRequestHandler):
            def log_message(self, *args):
                pass

        class Threaded(socketserver.ThreadingMixIn, WSGIServer):
            daemon_threads = True

        self.httpd = Threaded(("127.0.0.1", 0), Quiet)
        self.httpd.set_app(a2a_min.wsgi_app(self.server))
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self.httpd.server_address[1]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class AsgiHostClient(HostClient):
    """asgi_app under a real uvicorn, in a thread of this process."""

    def start(self):
        import socket
        need("uvicorn", "ASGI host: needs uvicorn (the test extra)")
        import uvicorn
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        config = uvicorn.Config(a2a_min.asgi_app(self.server), host="127.0.0.1", port=port,
                                log_level="warning", lifespan="on")
        self.uvicorn = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.uvicorn.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.uvicorn.started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.uvicorn.started
        return port

    def close(self):
        self.uvicorn.should_exit = True
        self.thread.join(5)


class LambdaHostClient(HostClient):
    """lambda_handler, given HTTP API (payload 2.0) events as API Gateway would."""

    def start(self):
        self.handler = a2a_min.lambda_handler(self.server)
        return None

    def raw(self, body, headers=V1, query=""):
        import base64

        class Context:
            def get_remaining_time_in_millis(self):
                return 60_000
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        event = {"version": "2.0", "rawPath": "/", "rawQueryString": query,
                 "headers": {**dict(headers), "host": "lambda.test"},
                 "requestContext": {"http": {"method": "POST", "path": "/"}, "stage": "$default"},
                 "body": base64.b64encode(body).decode(), "isBase64Encoded": True}
        answer = self.handler(event, Context())
        data = answer["body"].encode() if not answer["isBase64Encoded"] \
            else base64.b64decode(answer["body"])
        stream = [data] if answer["headers"].get("Content-Type") == "text/event-stream" else None
        return a2a_min.Response(answer["statusCode"], list(answer["headers"].items()), data, stream)


BINDINGS = {"jsonrpc": Client, "http+json": RestClient, "grpc": GrpcClient,
            "via_threads": ThreadsHostClient, "via_asyncio": AsyncioHostClient,
            "via_threads_tls": ThreadsTlsHostClient, "via_asyncio_tls": AsyncioTlsHostClient,
            "via_wsgi": WsgiHostClient, "via_asgi": AsgiHostClient,
            "via_lambda": LambdaHostClient}
JSONRPC_CLIENTS = (Client, ThreadsHostClient, AsyncioHostClient, ThreadsTlsHostClient,
                   AsyncioTlsHostClient, WsgiHostClient,
                   AsgiHostClient, LambdaHostClient)


def grpc_available():
    import importlib.util
    return all(importlib.util.find_spec(m) for m in ("grpc", "google.rpc", "google.protobuf"))


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


# -- hosts in processes of their own, and raw sockets ----------------------------------

HEADERS = {"A2A-Version": "1.0", "Content-Type": "application/json"}


def rpc_body(method, params):
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def free_port():
    """A port on 127.0.0.1 that was free a moment ago, for a host to listen on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_host(argv, port):
    """Start a host (``argv``, run in the repository) and wait until it accepts
    connections on 127.0.0.1:``port``; the caller terminates it."""
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stderr.read())
            time.sleep(0.1)
    proc.terminate()
    raise RuntimeError("the host did not start")


def exercise(port):
    """The same checks over a real socket, whatever the host."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/.well-known/agent-card.json")
    resp = conn.getresponse()
    card = json.loads(resp.read())
    assert resp.status == 200 and card["supportedInterfaces"][0]["url"] == \
        f"http://127.0.0.1:{port}/"
    conn.request("POST", "/", rpc_body("SendMessage", {"message": user_message("hi")}), HEADERS)
    task = json.loads(conn.getresponse().read())["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    conn.request("GET", f"/tasks/{task['id']}?historyLength=0", headers=HEADERS)
    got = json.loads(conn.getresponse().read())
    assert got["id"] == task["id"] and "history" not in got
    conn.request("POST", "/", rpc_body("GetTask", {"id": "nope"}), HEADERS)
    assert json.loads(conn.getresponse().read())["error"]["code"] == -32001
    stream = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    stream.request("POST", "/message:stream", json.dumps(
        {"message": user_message("stream over a host")}), HEADERS)
    resp = stream.getresponse()
    assert resp.getheader("Content-Type") == "text/event-stream"
    events = parse_sse(resp.read())
    assert "task" in events[0][1]
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    text = "".join(e[1]["artifactUpdate"]["artifact"]["parts"][0]["text"]
                   for e in events if "artifactUpdate" in e[1])
    assert text == "You said: stream over a host"


def process_tree(pid):
    """``pid`` and its children (gunicorn serves from a worker process)."""
    pids = [pid]
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except (FileNotFoundError, ProcessLookupError):
            pass                               # a thread that just ended (exiting: ESRCH)
    return pids


def tcp_connections():
    """Socket inodes of the machine's TCP connections (any state but LISTEN)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] != "0A":          # 0A: LISTEN
                    inodes.add(fields[9])
    return inodes


def usage(pid):
    """(open TCP connections, threads) of the host's processes. Connections, not
    every descriptor: a leaked one shows there, while a host's own pipes and
    socket pairs come and go with its internals."""
    connections, threads, tcp = 0, 0, tcp_connections()
    for p in process_tree(pid):
        for fd in os.listdir(f"/proc/{p}/fd"):
            try:
                target = os.readlink(f"/proc/{p}/fd/{fd}")
            except FileNotFoundError:
                continue                       # closed meanwhile
            connections += target.startswith("socket:[") and target[8:-1] in tcp
        threads += len(os.listdir(f"/proc/{p}/task"))
    return connections, threads


def exchange(port, data, *, until=b"", timeout=10, shut=False):
    """Send raw bytes; read until ``until`` has appeared (or the server closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        got = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (until and until in got):
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not chunk:
                break
            got += chunk
        return got
