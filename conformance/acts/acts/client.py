"""Client tests (ACTS section 10): a canned wire payload that the
implementation's own client must parse, here a2a_client.py of this repository.

a2a_client parses only what it reads from a connection, so the payload is
served by a small HTTP server on 127.0.0.1 and the client is pointed at it:
- get_agent_card: the payload is the card at /.well-known/agent-card.json and
  a2a_client.fetch_card() reads it;
- every other operation: a card naming a JSON-RPC interface on that server,
  and the payload as the answer to the client's request, through
  Client.call() (Client.call_stream() for streams: a list payload is served
  as SSE events). A JSON-RPC envelope is answered with its `id` replaced by
  the request's (the corpus's ids are placeholders; --client-keep-id sends
  them as written); a bare object is answered as the `result`.
What the client returns is the parsed result; an A2A error it raises is
parsed as {"error": {"code", "message", "reason", "type"}}."""

import http.server
import json
import sys
import threading

METHODS = {
    "send_message": ("SendMessage", {"message": {"messageId": "acts-client", "role": "ROLE_USER",
                                                 "parts": [{"text": "client test"}]}}),
    "send_streaming_message": ("SendStreamingMessage", {"message": {
        "messageId": "acts-client", "role": "ROLE_USER", "parts": [{"text": "client test"}]}}),
    "get_task": ("GetTask", {"id": "acts-client-task"}),
    "list_tasks": ("ListTasks", {}),
    "cancel_task": ("CancelTask", {"id": "acts-client-task"}),
    "subscribe_to_task": ("SubscribeToTask", {"id": "acts-client-task"}),
    "get_extended_agent_card": ("GetExtendedAgentCard", {}),
    "create_push_config": ("CreateTaskPushNotificationConfig",
                           {"taskId": "acts-client-task", "url": "http://127.0.0.1:9/"}),
    "get_push_config": ("GetTaskPushNotificationConfig",
                        {"taskId": "acts-client-task", "id": "c"}),
    "list_push_configs": ("ListTaskPushNotificationConfigs", {"taskId": "acts-client-task"}),
    "delete_push_config": ("DeleteTaskPushNotificationConfig",
                           {"taskId": "acts-client-task", "id": "c"}),
}
ALIASES = {
    "set_push_notification_config": "create_push_config",
    "create_push_notification_config": "create_push_config",
    "get_push_notification_config": "get_push_config",
    "list_push_notification_configs": "list_push_configs",
    "delete_push_notification_config": "delete_push_config",
}


class ParseFailed(Exception):
    pass


class CannedServer:
    """Answers whatever it is told to, on 127.0.0.1 only."""

    def __init__(self):
        self.card = None
        self.answer = None              # JSON-RPC payload, or a list (SSE)
        self.keep_id = False
        self.requests = []
        canned = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status, body, ctype="application/json"):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.split("?")[0] == "/.well-known/agent-card.json" and canned.card:
                    self._send(200, canned.card)
                else:
                    self._send(404, {"error": {"code": 404, "status": "NOT_FOUND",
                                               "message": "no such path"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    request = {}
                canned.requests.append(request)
                answer = canned.answer
                if isinstance(answer, list):
                    lines = []
                    for event in answer:
                        event = canned.envelope(event, request)
                        lines.append(f"data: {json.dumps(event)}\n\n")
                    self._send(200, "".join(lines).encode(), "text/event-stream")
                else:
                    self._send(200, canned.envelope(answer, request))

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def envelope(self, payload, request):
        if isinstance(payload, dict) and payload.get("jsonrpc") == "2.0":
            if self.keep_id:
                return payload
            return {**payload, "id": request.get("id")}
        return {"jsonrpc": "2.0", "id": request.get("id"), "result": payload}

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class ClientHarness:
    def __init__(self, repo, keep_id=False):
        if repo not in sys.path:
            sys.path.insert(0, repo)
        import a2a_client
        import a2a_min
        self.a2a_client, self.a2a_min = a2a_client, a2a_min
        self.server = CannedServer()
        self.server.keep_id = keep_id

    def runner_card(self):
        return {"name": "ACTS canned payloads", "description": "ACTS client tests",
                "version": "1.0.0",
                "supportedInterfaces": [{"url": self.server.base + "/",
                                         "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "capabilities": {"streaming": True, "pushNotifications": True,
                                 "extendedAgentCard": True},
                "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
                "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["s"]}]}

    def parse(self, operation, payload):
        """What a2a_client makes of `payload` as the answer to `operation`."""
        operation = ALIASES.get(operation, operation)
        client_mod = self.a2a_client
        if operation == "get_agent_card":
            self.server.card = payload
            try:
                card, _ = client_mod.fetch_card(self.server.base + "/", timeout=10)
            except self.a2a_min.A2AError as exc:
                raise ParseFailed(f"a2a_client.fetch_card: {type(exc).__name__}: {exc}")
            return card
        if operation not in METHODS:
            raise ParseFailed(f"no client mapping for operation {operation!r}")
        method, params = METHODS[operation]
        self.server.card = self.runner_card()
        self.server.answer = payload
        try:
            client = client_mod.Client(self.server.base + "/", timeout=10)
        except self.a2a_min.A2AError as exc:
            raise ParseFailed(f"a2a_client.Client could not use the runner's card: {exc}")
        try:
            if operation in ("send_streaming_message", "subscribe_to_task"):
                return {"events": list(client.call_stream(method, params))}
            return client.call(method, params)
        except client_mod.ClientError as exc:
            raise ParseFailed(f"a2a_client could not parse the payload: {exc}")
        except self.a2a_min.A2AError as exc:
            return {"error": {"code": exc.code, "message": str(exc), "reason": exc.reason,
                              "type": type(exc).__name__}}
        finally:
            client.close()

    def close(self):
        self.server.close()
