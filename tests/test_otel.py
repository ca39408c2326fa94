"""OpenTelemetry spans (a2a_otel), when a process uses OpenTelemetry: one
trace from the user's request through agent A, its a2a_client call to agent
B and A's webhook deliveries, recorded by the SDK's in-memory exporter in a
process of its own (tests/otel_trace.py); and none of it when the process
has not imported OpenTelemetry."""

import json
import os
import subprocess
import sys

import pytest

from harness import ROOT, grpc_available, need

# (Looked for, not imported: a tracer provider is set once per process, so the
# traces are made in processes of their own.)
need("opentelemetry.sdk", "OpenTelemetry's SDK: pip install -e '.[test]'")


def one_trace(binding, host):
    done = subprocess.run([sys.executable, "tests/otel_trace.py", binding, host], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("binding, host", [("JSONRPC", "threads"), ("HTTP+JSON", "threads"),
                                           ("GRPC", "threads"), ("JSONRPC", "asyncio")])
def test_one_trace_crosses_two_servers_and_a_webhook(binding, host):
    if binding == "GRPC" and not grpc_available():
        pytest.skip("grpcio is not installed")
    found = one_trace(binding, host)
    assert found["answer"]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    trace_id, root_id = found["root"]
    spans = [s for s in found["spans"] if s["context"][0] == trace_id]
    others = [s["name"] for s in found["spans"] if s["context"][0] != trace_id]
    assert set(others) <= {"GET /.well-known/agent-card.json", "a2a.turn",  # (the set-up's,
                           "lf.a2a.v1.A2AService/SendMessage",             # and what comes
                           "lf.a2a.v1.A2AService/SubscribeToTask"}, others  # after: below)
    by_id = {s["context"][1]: s for s in spans}

    def only(kind, name=None, scope=None, parent=None):
        hits = [s for s in spans if s["kind"] == kind and (name is None or s["name"] == name)
                and (scope is None or s["scope"] == scope)
                and (parent is None or s["parent"][1] == parent["context"][1])]
        assert len(hits) == 1, (kind, name, [(s["name"], s["kind"]) for s in spans])
        return hits[0]

    server_a = next(s for s in spans if s["kind"] == "SERVER" and s["parent"][1] == root_id)
    assert server_a["attributes"]["rpc.system"] == "jsonrpc"
    assert server_a["attributes"]["rpc.method"] == "SendMessage"
    assert server_a["attributes"]["http.route"] == "/"
    assert server_a["attributes"]["http.response.status_code"] == 200
    assert server_a["name"] == "lf.a2a.v1.A2AService/SendMessage"
    turn_a = only("INTERNAL", "a2a.turn", parent=server_a)
    assert turn_a["attributes"]["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert turn_a["attributes"]["a2a.task.id"] == found["answer"]["result"]["task"]["id"]
    client = only("CLIENT", "lf.a2a.v1.A2AService/SendMessage", "a2a_client", parent=turn_a)
    server_b = only("SERVER", parent=client)
    if binding == "GRPC":
        assert server_b["attributes"]["rpc.system"] == "grpc"
        assert server_b["attributes"]["rpc.service"] == "lf.a2a.v1.A2AService"
        assert server_b["name"] == "lf.a2a.v1.A2AService/SendMessage"
    elif binding == "HTTP+JSON":
        assert server_b["attributes"]["http.route"] == "/message:send"
        assert server_b["attributes"]["a2a.method"] == "SendMessage"
        assert server_b["name"] == "POST /message:send"
    else:
        assert server_b["attributes"]["rpc.system"] == "jsonrpc"
    only("INTERNAL", "a2a.turn", parent=server_b)
    # Each webhook attempt: a CLIENT span under A's turn, named in the POST's traceparent.
    hooks = [s for s in spans if s["kind"] == "CLIENT" and s["scope"] == "a2a_min"]
    assert len(hooks) == len(found["webhooks"]) == 4          # 3 events, one retried
    assert all(s["parent"][1] == turn_a["context"][1] for s in hooks)
    assert sorted(found["webhooks"]) == sorted(f"00-{trace_id}-{s['context'][1]}-01"
                                               for s in hooks)
    assert [s["status"] for s in hooks].count("ERROR") == 1   # the answer 500
    assert [s["name"] for s in spans if s["parent"] is None] == ["the user's request"]
    assert all(s["parent"][1] in by_id for s in spans if s["parent"])    # no span left open
    assert all(not s["links"] for s in spans)
    # Later requests about a task are in traces of their own; the task's id ties them.
    assert found["refused"]["error"]["code"] == -32004                  # (A's task has ended)
    subscribe = [s for s in found["spans"] if s["attributes"].get("rpc.method") ==
                 "SubscribeToTask"]
    assert len(subscribe) == 1 and subscribe[0]["context"][0] != trace_id
    assert not subscribe[0]["links"]
    assert found["continued"]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    turns_c = [s for s in found["spans"] if s["name"] == "a2a.turn" and
               s["attributes"]["a2a.task.id"] == found["continued"]["result"]["task"]["id"]]
    assert len(turns_c) == 2 and turns_c[0]["context"][0] != turns_c[1]["context"][0]
    assert all(not s["links"] for s in found["spans"])


def test_without_opentelemetry_imported_no_companion_is_loaded():
    code = ("import sys, a2a_min; s = a2a_min.Server(lambda ctx: 'ok');"
            "r = s.handle_http('POST', '/', '', {'a2a-version': '1.0', 'content-type': "
            "'application/json', 'traceparent': '00-' + 'a' * 32 + '-' + 'b' * 16 + '-01'}, "
            "b'{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":"
            "{\"messageId\":\"m\",\"role\":\"ROLE_USER\",\"parts\":[{\"text\":\"hi\"}]}}}');"
            "assert r.status == 200;"
            "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'a2a_'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['a2a_min']"


def test_tracing_opentelemetry_without_the_package_says_what_to_install(tmp_path):
    """A process where OpenTelemetry cannot be imported, asked for it: the error
    names what is missing (here: a2a_otel is copied alone, without the package)."""
    code = ("import sys; sys.modules['opentelemetry'] = None; import a2a_min;"
            "s = a2a_min.Server(lambda ctx: 'ok', tracing='opentelemetry');"
            "s.handle_http('GET', '/.well-known/agent-card.json', '', {})")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    assert "pip install opentelemetry-api opentelemetry-sdk" in done.stderr, done.stderr


def test_a_process_that_configured_opentelemetry_gets_spans_only_where_it_asks():
    """OpenTelemetry's SDK set up, a2a_otel.py beside a2a_min.py: a default
    Server and Client make no span (a2a_otel is not even loaded); the ones
    that ask, Server(tracing="opentelemetry") and Client(trace="opentelemetry"), do."""
    code = """if True:
        import json, sys, threading
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import a2a_client, a2a_min
        exporter, provider = InMemorySpanExporter(), TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)

        def served(**options):
            server = a2a_min.Server(lambda ctx: 'ok', **options)
            httpd = a2a_min.make_http_server(server, '127.0.0.1', 0)
            threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
            return httpd, 'http://127.0.0.1:%d' % httpd.server_address[1]

        def spans():
            names = sorted(s.name for s in exporter.get_finished_spans())
            exporter.clear()
            return names
        httpd, url = served()
        with a2a_client.Client(url) as client:
            client.send('hi')
        print(json.dumps([spans(), 'a2a_otel' in sys.modules]))
        with a2a_client.Client(url, trace='opentelemetry') as client:
            client.send('hi')
        print(json.dumps(spans()))
        httpd.shutdown()
        httpd, url = served(tracing='opentelemetry')
        with a2a_client.Client(url) as client:
            client.send('hi')
        print(json.dumps(spans()))
        httpd.shutdown()
    """
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    default, client_asks, server_asks = [json.loads(line) for line in done.stdout.splitlines()]
    assert default == [[], False]
    assert client_asks == ["lf.a2a.v1.A2AService/SendMessage"]
    assert server_asks == ["GET /.well-known/agent-card.json", "a2a.turn",
                           "lf.a2a.v1.A2AService/SendMessage"]


SPANS_OF = """if True:
    import json, sys, time
    sys.path.insert(0, 'tests')
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider, sampling
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    import a2a_min
    from webhook_receiver import Receiver

    def provider(sampler=None):
        made = TracerProvider(**({'sampler': sampler} if sampler else {}))
        made.exporter = InMemorySpanExporter()
        made.add_span_processor(SimpleSpanProcessor(made.exporter))
        return made

    def spans(of):
        return [{'name': s.name, 'kind': s.kind.name, 'attributes': dict(s.attributes)}
                for s in of.exporter.get_finished_spans()]
    HEADERS = {'a2a-version': '1.0', 'content-type': 'application/json', 'host': 'localhost'}

    def send(server, message, configuration=None, headers=HEADERS):
        body = {'jsonrpc': '2.0', 'id': 1, 'method': 'SendMessage', 'params': {
            'message': {'messageId': 'm', 'role': 'ROLE_USER', 'parts': [{'text': 'hi'}],
                        **message}, 'configuration': configuration or {}}}
        answer = server.handle_http('POST', '/', '', headers, json.dumps(body).encode())
        assert answer.status == 200, answer.body
%s
"""


def spans_of(script, env=None):
    done = subprocess.run([sys.executable, "-c", SPANS_OF % script], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_what_a_client_chose_is_bounded_in_spans_and_webhook_secrets_stay_out():
    """A 100,000-character contextId, a 60,000-character path and a method
    HTTP has not are cut or named by their kind, never kept whole; a path no
    route matches is no http.route; a webhook's query (its access token) and
    fragment are not in url.full."""
    found = spans_of("""
    receiver, traced = Receiver(), provider()
    server = a2a_min.Server(lambda ctx: 'ok', tracing=traced, push_notifications=True,
                            push_allow=['127.0.0.1/32'])
    send(server, {'contextId': 'c' * 100000}, {'taskPushNotificationConfig': {
        'url': receiver.url('/ok') + '?access_token=SECRET&x=1#SECRET2'}})
    server.handle_http('GET', '/' + 'x' * 60000, '', HEADERS)
    server.handle_http('POST', '/tasks/' + 'y' * 60000 + ':cancel', '', HEADERS, b'{}')
    server.handle_http('B' * 1000, '/', '', HEADERS)
    deadline = time.monotonic() + 10                 # (a hang guard only)
    while server.push_stats['delivered'] < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    print(json.dumps([receiver.url('/ok'), spans(traced)]))
    """)
    hook, spans = found
    turn = next(s for s in spans if s["name"] == "a2a.turn")["attributes"]
    assert turn["a2a.context.id"] == "c" * 255 + "\u2026"
    webhooks = [s["attributes"] for s in spans if s["kind"] == "CLIENT"]
    assert len(webhooks) == 3 and all(a["url.full"] == hook for a in webhooks), webhooks
    unmatched = next(s for s in spans if s["attributes"].get("url.path", "").startswith("/xxx"))
    assert unmatched["name"] == "GET" and "http.route" not in unmatched["attributes"]
    assert unmatched["attributes"]["url.path"] == "/" + "x" * 254 + "\u2026"
    cancel = next(s for s in spans if s["attributes"].get("url.path", "").startswith("/tasks/yyy"))
    assert cancel["name"] == "POST /tasks/{id}:cancel", cancel
    assert cancel["attributes"]["http.route"] == "/tasks/{id}:cancel"
    assert len(cancel["attributes"]["url.path"]) == 256
    other = next(s for s in spans if s["attributes"].get("http.request.method") == "_OTHER")
    assert other["name"] == "HTTP"
    assert all(len(v) <= 256 for s in spans for v in s["attributes"].values()
               if isinstance(v, str)) and all(len(s["name"]) <= 256 for s in spans)


def test_the_providers_sampler_decides_what_is_recorded():
    """docs/deploying.md: OpenTelemetry's default sampler (parent-based)
    records a request whose traceparent says sampled whatever its ratio; a
    plain ratio sampler holds it to the operator's ratio."""
    found = spans_of("""
    sampled = {**HEADERS, 'traceparent': '00-' + 'a' * 32 + '-' + 'b' * 16 + '-01'}
    counts = []
    for sampler in (sampling.ParentBased(sampling.TraceIdRatioBased(0.0)),
                    sampling.TraceIdRatioBased(0.0)):
        traced = provider(sampler)
        send(a2a_min.Server(lambda ctx: 'ok', tracing=traced), {}, headers=sampled)
        send(a2a_min.Server(lambda ctx: 'ok', tracing=traced), {})
        counts.append(len(spans(traced)))
    print(json.dumps(counts))
    """)
    assert found == [2, 0]          # (the sampled request's SERVER and turn spans; then none)


def test_the_command_line_asks_for_spans_with_opentelemetry():
    """--opentelemetry (for opentelemetry-instrument python a2a_min.py ...): the
    demo's server makes spans with the provider the process set; without it, none."""
    found = spans_of("""
    traced = provider()
    trace.set_tracer_provider(traced)
    import a2a_cli
    parser = a2a_cli._parser()
    for argv in ([], ['--opentelemetry']):
        options = a2a_cli._server_options(parser.parse_args(argv))
        send(a2a_min.Server(lambda ctx: 'ok', **options), {})
    print(json.dumps([s['name'] for s in spans(traced)]))
    """)
    assert sorted(found) == ["a2a.turn", "lf.a2a.v1.A2AService/SendMessage"]


def test_otel_sdk_disabled_turns_the_spans_asked_for_off():
    found = spans_of("""
    traced = provider()
    send(a2a_min.Server(lambda ctx: 'ok', tracing=traced), {})
    print(json.dumps([len(spans(traced)), 'a2a_otel' in sys.modules]))
    """, env={"OTEL_SDK_DISABLED": "TRUE"})
    assert found == [0, False]
