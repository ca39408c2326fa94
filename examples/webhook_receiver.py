"""A webhook receiver to watch push notifications arrive.

    python3 examples/webhook_receiver.py 9000         # prints every delivery

Then, with an agent that has push notifications on and allows this machine
(Server(..., push_notifications=True, push_allow=["127.0.0.1/32"])):

    curl -s localhost:8000/message:send -H 'A2A-Version: 1.0' \\
      -H 'Content-Type: application/json' -d '{"message": {"messageId": "m1",
      "role": "ROLE_USER", "parts": [{"text": "hi"}]}, "configuration":
      {"taskPushNotificationConfig": {"url": "http://127.0.0.1:9000/hook",
      "token": "t1", "authentication": {"scheme": "Bearer", "credentials": "c1"}}}}'

Each delivery is one POST of a StreamResponse (a task, a status update or an
artifact update) with Content-Type application/a2a+json, the Authorization
header built from the config's authentication, X-A2A-Notification-Token, and
traceparent (W3C trace context: the trace of the turn that made the event).
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        print(f"--- POST {self.path}")
        for name in ("Content-Type", "Authorization", "X-A2A-Notification-Token", "traceparent"):
            if self.headers.get(name):
                print(f"{name}: {self.headers[name]}")
        try:
            print(json.dumps(json.loads(body), indent=2))
        except ValueError:
            print(body[:2000])
        sys.stdout.flush()
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", nargs="?", type=int, default=9000, help="default 9000")
    port = parser.parse_args().port
    print(f"webhook receiver on http://127.0.0.1:{port}/ (Ctrl-C to stop)", flush=True)
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
