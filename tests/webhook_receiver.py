"""A real webhook receiver on 127.0.0.1 that records what it is sent.

Used by the push notification tests; also runnable by hand (see
examples/webhook_receiver.py for the user-facing version). Paths choose a
behaviour: /ok answers 204, /fail/N answers 500 the first N times, /stall
answers after ``stall`` seconds (or at close()), /trickle sends a long status
line one byte every ``trickle`` seconds, /redirect answers 302 to itself,
/huge answers a 10 MB body, /close drops the connection. With ``tls`` (a
server-side ssl.SSLContext) it speaks https.

Tarpit is a worse receiver still: it listens and never accepts, so the
kernel completes connections into its backlog and nothing ever answers.
"""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, stall=3.0, trickle=0.1, tls=None):
        self.requests = []
        self.cond = threading.Condition()
        self.failures = {}
        self.stall = stall
        self.trickle = trickle
        self.released = threading.Event()      # set by close(): stalls and trickles end
        self.scheme = "https" if tls else "http"
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.cond:
                    receiver.requests.append({
                        "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": json.loads(body) if body else None, "at": time.monotonic()})
                    receiver.cond.notify_all()
                parts = self.path.strip("/").split("/")
                if parts[0] == "fail":
                    seen = receiver.failures.get(self.path, 0)
                    receiver.failures[self.path] = seen + 1
                    return self.answer(500 if seen < int(parts[1]) else 204)
                if parts[0] == "stall":
                    receiver.released.wait(receiver.stall)
                    return self.answer(204)
                if parts[0] == "trickle":
                    self.close_connection = True
                    try:
                        for byte in b"HTTP/1.1 204 " + b"slowly" * 50 + b"\r\n\r\n":
                            if receiver.released.wait(receiver.trickle):
                                return
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                    except OSError:
                        receiver.trickle_cut = True    # the sender hung up mid-line
                    return
                if parts[0] == "redirect":
                    self.send_response(302)
                    self.send_header("Location", f"http://127.0.0.1:{receiver.port}/ok")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if parts[0] == "huge":
                    self.send_response(200)
                    self.send_header("Content-Length", str(10_000_000))
                    self.end_headers()
                    try:
                        for _ in range(100):
                            self.wfile.write(b"x" * 100_000)
                    except OSError:
                        pass
                    return
                if parts[0] == "close":
                    self.close_connection = True
                    return
                self.answer(204)

            def answer(self, status):
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        class Server(ThreadingHTTPServer):
            daemon_threads = True

        self.trickle_cut = False
        self.httpd = Server(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, path="/ok", host="127.0.0.1"):
        return f"{self.scheme}://{host}:{self.port}{path}"

    def wait(self, count, path=None, timeout=10):
        """The first ``count`` requests (to ``path``), waiting up to ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = [r for r in self.requests if path is None or r["path"] == path]
                if len(got) >= count or time.monotonic() > deadline:
                    return got
                self.cond.wait(0.05)

    def close(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class Tarpit:
    """A listening socket on 127.0.0.1 that never accepts: connections complete
    in the kernel's backlog, requests are buffered, no answer ever comes."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]

    def url(self, path="/hook"):
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self):
        self.sock.close()
