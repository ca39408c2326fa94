"""Run the Lambda handler locally: each real HTTP request becomes an API
Gateway HTTP API (payload 2.0) event, and the handler's answer goes back.

    python examples/lambda_local.py 9000        # then curl, the SDK or the kit at :9000
    python examples/lambda_local.py 9000 --handler tck_agent:handler   # another handler

It lets ordinary HTTP tools reach examples/lambda_function.py exactly as
API Gateway would call it, buffered streams included. Requests are read with
a2a_min's own strict HTTP/1.1 reader (a2a_min._RequestReader), with the same
limits as a2a_min's servers: a malformed or oversized request is refused
before the handler sees it, as API Gateway would refuse it.
"""

import base64
import importlib
import json
import os
import socketserver
import sys
import time
from http import HTTPStatus

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import a2a_min  # noqa: E402

TIMEOUT = 30.0                 # a request must arrive whole within this, as API Gateway's


class Context:
    """The part of Lambda's context object the handler uses: a 30 s deadline."""

    def __init__(self, seconds=30.0):
        self.deadline = time.monotonic() + seconds

    def get_remaining_time_in_millis(self):
        return int((self.deadline - time.monotonic()) * 1000)


def event_of(request, client):
    """An HTTP API (payload 2.0) event for one request."""
    path, _, query = request.target.partition("?")
    headers = dict(request.headers)
    headers.setdefault("x-forwarded-proto", "http")
    return {
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
        "headers": headers,
        "requestContext": {"http": {"method": request.method, "path": path, "sourceIp": client},
                           "stage": "$default"},
        "body": base64.b64encode(request.body).decode(), "isBase64Encoded": True,
    }


def http_answer(status, headers, body, close):
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {len(body)}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Runner(socketserver.BaseRequestHandler):
    handler = None             # module:attribute from --handler, lambda_function:handler by default

    def handle(self):
        sock, buffer = self.request, bytearray()
        reader = a2a_min._RequestReader()
        while True:
            deadline = time.monotonic() + TIMEOUT
            try:
                while (request := reader.read(buffer)) is None:
                    if reader.expects_continue:
                        sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                        reader.expects_continue = False
                    sock.settimeout(max(deadline - time.monotonic(), 0.001))
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
            except a2a_min._BadRequest as bad:
                body = ('{"message": %s}' % json.dumps(bad.error.message)).encode()
                sock.sendall(http_answer(bad.status, {"Content-Type": "application/json"},
                                         body, True))
                return
            except OSError:                        # timed out or gone: as API Gateway, close
                return
            answer = self.handler(event_of(request, self.client_address[0]), Context())
            data = answer.get("body", "")
            data = base64.b64decode(data) if answer.get("isBase64Encoded") else data.encode()
            try:
                sock.sendall(http_answer(answer["statusCode"], answer.get("headers", {}),
                                         b"" if request.method == "HEAD" else data,
                                         not request.keep_alive))
            except OSError:
                return                             # the client left before its answer
            if not request.keep_alive:
                return


class Gateway(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    args = sys.argv[1:]
    spec = "lambda_function:handler"
    if "--handler" in args:
        at = args.index("--handler")
        spec = args[at + 1]
        del args[at:at + 2]
    module, _, attribute = spec.partition(":")
    Runner.handler = staticmethod(getattr(importlib.import_module(module), attribute))
    port = int(args[0]) if args else 9000
    print(f"Lambda handler behind a local runner on http://127.0.0.1:{port}/", flush=True)
    Gateway(("127.0.0.1", port), Runner).serve_forever()
