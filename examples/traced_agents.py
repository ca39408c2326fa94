"""Two agents, one calling the other, and the one trace they make.

Agent "Planner" answers by asking agent "Writer" (with a2a_client, saying
nothing about traces: the client carries the turn's trace context by itself,
and makes a span since its turn has one). Spans are asked for by name:
Server(tracing="opentelemetry") and Client(trace="opentelemetry").
OpenTelemetry's console exporter prints each span as it ends: the user's
CLIENT call, the request's SERVER span on Planner, its turn, the CLIENT call
to Writer, Writer's SERVER span and turn, all with one trace_id (the two
agent card fetches before them are traces of their own).

    pip install opentelemetry-sdk          # (opentelemetry-api comes with it)
    python examples/traced_agents.py

Without OpenTelemetry, a2a_min still reads and passes on the W3C trace
context (RequestContext.trace): this script then says what to install.
"""

import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

try:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
except ImportError:
    sys.exit("this example prints OpenTelemetry spans: pip install opentelemetry-sdk")

import a2a_client  # noqa: E402
import a2a_min  # noqa: E402

# The process configures OpenTelemetry (here: every span printed as JSON when it ends);
# each Server(tracing="opentelemetry") makes its spans with this provider.
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(provider)


def serve(server):
    """``server`` on a free port of 127.0.0.1, on a thread; its URL."""
    httpd = a2a_min.make_http_server(server, "127.0.0.1", 0)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{httpd.server_address[1]}", httpd


def writer(ctx):
    return f"A haiku about {ctx}: ..."


writer_url, writer_httpd = serve(a2a_min.Server(writer, name="Writer", tracing="opentelemetry"))


def planner(ctx):
    with a2a_client.Client(writer_url) as client:      # (the trace goes along by itself)
        answer = client.send(f"{ctx}")
    return "Writer says: " + answer["task"]["artifacts"][0]["parts"][0]["text"]


planner_url, planner_httpd = serve(a2a_min.Server(planner, name="Planner",
                                                  tracing="opentelemetry"))

with a2a_client.Client(planner_url, trace="opentelemetry") as user:    # (a span of its own)
    answer = user.send("autumn")
print(json.dumps(answer["task"]["artifacts"][0]["parts"][0]), file=sys.stderr)
planner_httpd.shutdown()
writer_httpd.shutdown()
