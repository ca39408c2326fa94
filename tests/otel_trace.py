"""One trace across two a2a_min servers and a webhook receiver, recorded by
OpenTelemetry's SDK with its in-memory exporter; run by tests/test_otel.py in
a process of its own (a tracer provider is set once per process), it prints
the finished spans and what the receiver was sent, as JSON.

    python tests/otel_trace.py BINDING HOST      # JSONRPC|HTTP+JSON|GRPC threads|asyncio
"""

import asyncio
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

import a2a_client  # noqa: E402
import a2a_min  # noqa: E402
from harness import AsyncioHostClient, Live, scenario_agent, user_message  # noqa: E402
from webhook_receiver import Receiver  # noqa: E402

binding, host = sys.argv[1], sys.argv[2]
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

receiver = Receiver()
b = Live(a2a_min.Server(lambda ctx: "B was here", name="B",
                          tracing="opentelemetry"), timeout=5)
card = json.loads(b.request("GET", "/.well-known/agent-card.json")[1])
grpc_server = None
if binding == "GRPC":
    import a2a_grpc
    grpc_server, port = a2a_grpc.create_server(b.server, "127.0.0.1:0")
    grpc_server.start()
    card["supportedInterfaces"] = [{"url": f"127.0.0.1:{port}", "protocolBinding": "GRPC",
                                    "protocolVersion": "1.0"}]


def ask_b():
    with a2a_client.Client(card, binding=binding, card_url=b.url) as client:
        return client.send("hello B")["task"]["artifacts"][0]["parts"][0]["text"]


def agent_a(ctx):
    return "A asked B, who said: " + ask_b()


async def async_agent_a(ctx):
    return "A asked B, who said: " + await asyncio.to_thread(ask_b)

server_a = a2a_min.Server(async_agent_a if host == "asyncio" else agent_a, name="A",
                          push_notifications=True, push_allow=["127.0.0.1/32"],
                          tracing="opentelemetry")
root_tracer = provider.get_tracer("the user")
body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
    "message": user_message("go"),
    "configuration": {"taskPushNotificationConfig": {"url": receiver.url("/fail/1")}}}}
with root_tracer.start_as_current_span("the user's request") as root:
    headers = {"A2A-Version": "1.0", "Content-Type": "application/json",
               "traceparent": "00-%032x-%016x-01" % (root.get_span_context().trace_id,
                                                     root.get_span_context().span_id)}
    if host == "asyncio":
        a = AsyncioHostClient(server_a)
        answer = json.loads(a.raw(body, headers=headers).body)
    else:
        a = Live(server_a, timeout=5)
        answer = json.loads(a.request("POST", "/", body, headers)[1])
got = receiver.wait(4, timeout=10)              # 3 events, the first one retried once


def later(params, method):
    """A request about A's task in a trace of its own: a SubscribeToTask."""
    request = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
    headers = {"A2A-Version": "1.0", "Content-Type": "application/json"}
    if host == "asyncio":
        return json.loads(a.raw(request, headers=headers).body)
    return json.loads(a.request("POST", "/", request, headers)[1])


refused = later({"id": answer["result"]["task"]["id"]}, "SubscribeToTask")   # (it has ended)
# A task that waits for its user, continued in a trace of its own.
c = Live(a2a_min.Server(scenario_agent, name="C", tracing="opentelemetry"), timeout=5)
waiting = json.loads(c.request("POST", "/", {"jsonrpc": "2.0", "id": 3, "method": "SendMessage",
                                             "params": {"message": user_message("wait")}},
                               {"A2A-Version": "1.0", "Content-Type": "application/json"})[1])
continued = json.loads(c.request("POST", "/", {"jsonrpc": "2.0", "id": 4, "method": "SendMessage",
                                               "params": {"message": user_message(
                                                   "done", taskId=waiting["result"]["task"]["id"])}},
                                 {"A2A-Version": "1.0", "Content-Type": "application/json"})[1])
c.close()
deadline = time.monotonic() + 10
while server_a.push_stats["delivered"] < 3 and time.monotonic() < deadline:
    time.sleep(0.02)
a.close()
b.close()
if grpc_server is not None:
    grpc_server.stop(0)
receiver.close()
threading.Event().wait(0.1)


def hexed(context):
    return None if context is None else ("%032x" % context.trace_id, "%016x" % context.span_id)


print(json.dumps({
    "answer": answer, "refused": refused, "continued": continued,
    "webhooks": [r["headers"].get("traceparent") for r in got],
    "root": hexed(root.get_span_context()),
    "spans": [{"name": s.name, "kind": s.kind.name, "context": hexed(s.context),
               "parent": hexed(s.parent), "attributes": dict(s.attributes or {}),
               "links": [[hexed(link.context), dict(link.attributes or {})] for link in s.links],
               "status": s.status.status_code.name, "scope": s.instrumentation_scope.name}
              for s in exporter.get_finished_spans()],
}))
