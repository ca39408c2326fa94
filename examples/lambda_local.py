"""Run the Lambda handler locally: each real HTTP request becomes an API
Gateway HTTP API (payload 2.0) event, and the handler's answer goes back.

    python examples/lambda_local.py 9000        # then curl, the SDK or the kit at :9000
    python examples/lambda_local.py 9000 --handler tck_agent:handler   # another handler

It lets ordinary HTTP tools reach examples/lambda_function.py exactly as
API Gateway would call it, buffered streams included.
"""

import base64
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import importlib  # noqa: E402

handler = None                 # module:attribute from --handler, lambda_function:handler by default


class Context:
    """The part of Lambda's context object the handler uses: a 30 s deadline."""

    def __init__(self, seconds=30.0):
        self.deadline = time.monotonic() + seconds

    def get_remaining_time_in_millis(self):
        return int((self.deadline - time.monotonic()) * 1000)


class Runner(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30                   # a client that stalls is dropped, as API Gateway would

    def handle_any(self):
        path, _, query = self.path.partition("?")
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = self.read_chunked()             # API Gateway hands Lambda the whole body
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        event = {
            "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": query,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "requestContext": {"http": {"method": self.command, "path": path,
                                        "sourceIp": self.client_address[0]},
                               "stage": "$default"},
            "body": base64.b64encode(body).decode(), "isBase64Encoded": True,
        }
        event["headers"].setdefault("x-forwarded-proto", "http")
        answer = handler(event, Context())
        data = answer.get("body", "")
        data = base64.b64decode(data) if answer.get("isBase64Encoded") else data.encode()
        self.send_response(answer["statusCode"])
        for name, value in answer.get("headers", {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            try:
                self.wfile.write(data)
            except OSError:
                self.close_connection = True       # the client left before its answer

    def read_chunked(self):
        parts = []
        while True:
            size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024).strip():
                    pass                           # trailers
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline(8)

    do_GET = do_POST = do_DELETE = do_PUT = do_OPTIONS = do_HEAD = handle_any

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    args = sys.argv[1:]
    spec = "lambda_function:handler"
    if "--handler" in args:
        at = args.index("--handler")
        spec = args[at + 1]
        del args[at:at + 2]
    module, _, attribute = spec.partition(":")
    handler = getattr(importlib.import_module(module), attribute)
    port = int(args[0]) if args else 9000
    print(f"Lambda handler behind a local runner on http://127.0.0.1:{port}/", flush=True)
    ThreadingHTTPServer(("127.0.0.1", port), Runner).serve_forever()
