"""A push-notification receiver for the runner-special push tests (ACTS 3.2
`webhook_endpoint`): an HTTP server on 127.0.0.1 only, on a port the system
picks, that records every request. Each test gets its own path, so what was
delivered is attributed to the test that configured it; the `webhookUrl`
variable is that path's URL."""

import http.server
import json
import threading
import time
import uuid


class Receiver:
    def __init__(self, host="127.0.0.1"):
        if host != "127.0.0.1":
            raise ValueError("the webhook receiver listens on 127.0.0.1 only")
        self.deliveries = {}            # path -> [delivery]
        self.cond = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(data) if data else None
                except ValueError:
                    body = None
                delivery = {"method": self.command, "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body, "text": data.decode("utf-8", "replace"),
                            "at": time.monotonic()}
                with receiver.cond:
                    receiver.deliveries.setdefault(self.path, []).append(delivery)
                    receiver.cond.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_PUT = do_POST

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def new_url(self, label="test"):
        return f"http://127.0.0.1:{self.port}/acts/{label}/{uuid.uuid4().hex[:12]}"

    def path_of(self, url):
        return url.split(f":{self.port}", 1)[1]

    def wait(self, url, until, timeout):
        """The deliveries to `url` once `until(deliveries)` holds, or when
        `timeout` seconds have passed."""
        path = self.path_of(url)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = list(self.deliveries.get(path, []))
                left = deadline - time.monotonic()
                if until(got) or left <= 0:
                    return got
                self.cond.wait(min(left, 0.5))

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
