"""GET /metrics (Server(metrics=True), the companion a2a_metrics): the
Prometheus text format as prometheus_client's own parser reads it, every
binding counted, the server's authentication in front of it unless it is
served on an address of its own, and nothing at all when it is off."""

import http.client
import json
import sys
import time

import pytest

import a2a_min
from harness import (ROOT, V1, AsyncioHostClient, Live, free_port, grpc_available, need,
                     rpc, run_host, user_message)

need("prometheus_client", "prometheus_client's parser: pip install -e '.[test]'")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402


def scrape(server, headers=None):
    """GET /metrics in-process: {name: {labels tuple: value}} and the Response."""
    response = server.handle_http("GET", "/metrics", "", headers or {})
    assert response.status == 200, response.body
    assert response.headers == [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")]
    return families(response.body.decode()), response


def families(text):
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def labels(**pairs):
    return tuple(sorted(pairs.items()))


def test_requests_are_counted_by_method_binding_and_outcome_with_their_latency():
    server = a2a_min.Server(lambda ctx: "ok", metrics=True)
    for _ in range(2):
        rpc(server, "SendMessage", {"message": user_message("hi")})
    rpc(server, "GetTask", {"id": "nope"})
    server.handle_http("GET", "/tasks/nope", "", dict(V1))
    got, _ = scrape(server)
    requests = got["a2a_requests_total"]
    assert requests == {
        labels(method="SendMessage", binding="JSONRPC", outcome="ok"): 2,
        labels(method="GetTask", binding="JSONRPC", outcome="TaskNotFoundError"): 1,
        labels(method="GetTask", binding="HTTP+JSON", outcome="TaskNotFoundError"): 1}
    buckets = {key: value for key, value in got["a2a_request_duration_seconds_bucket"].items()
               if ("method", "SendMessage") in key}
    by_bound = sorted((float(dict(key)["le"]), value) for key, value in buckets.items())
    assert by_bound[-1] == (float("inf"), 2)
    assert [v for _, v in by_bound] == sorted(v for _, v in by_bound)    # cumulative
    send = labels(method="SendMessage", binding="JSONRPC")
    assert got["a2a_request_duration_seconds_count"][send] == 2
    assert 0 < got["a2a_request_duration_seconds_sum"][send] < 5
    assert got["a2a_store_tasks"][()] == 2 and got["a2a_store_bytes"][()] > 0
    assert got["a2a_live_tasks"][()] == 0 and got["a2a_task_subscribers"][()] == 0
    assert got["a2a_push_deliveries_total"][labels(outcome="delivered")] == 0


def test_refusals_and_the_hosts_gauges_come_from_stats():
    server = a2a_min.Server(lambda ctx: "ok", metrics=True, max_body_bytes=100)
    live = Live(server, timeout=5)
    try:
        resp, _ = live.request("POST", "/", b"x" * 200, {**V1})
        assert resp.status == 413
        resp, data = live.request("GET", "/metrics")
        assert resp.status == 200
        got = families(data.decode())
    finally:
        live.close()
    assert got["a2a_refusals_total"] == {labels(limit="PAYLOAD_TOO_LARGE"): 1}   # (stats())
    assert got["a2a_host_connections"][labels(host="threads")] >= 1
    assert got["a2a_host_threads"][labels(host="threads")] >= 1


def test_an_answer_finished_on_the_event_loop_is_counted_once_it_is():
    async def agent(ctx):
        return "ok"
    host = AsyncioHostClient(a2a_min.Server(agent, metrics=True))
    try:
        for _ in range(3):
            answer = host.raw({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                               "params": {"message": user_message("hi")}})
            assert json.loads(answer.body)["result"]["task"]["status"]["state"] == \
                "TASK_STATE_COMPLETED"
        conn = host.connection()
        conn.request("GET", "/metrics")
        got = families(conn.getresponse().read().decode())
        conn.close()
    finally:
        host.close()
    assert got["a2a_requests_total"] == {
        labels(method="SendMessage", binding="JSONRPC", outcome="ok"): 3}


def test_a_stream_subscriber_is_counted_while_it_follows():
    import threading
    release = threading.Event()

    def agent(ctx):
        yield a2a_min.status_update("TASK_STATE_WORKING")
        release.wait(10)
    server = a2a_min.Server(agent, metrics=True)
    answer = json.loads(rpc(server, "SendMessage", {
        "message": user_message("hi"), "configuration": {"returnImmediately": True}}).body)
    task_id = answer["result"]["task"]["id"]
    stream = server.call("SubscribeToTask", {"id": task_id})
    try:
        next(iter(stream))
        got, _ = scrape(server)
        assert got["a2a_task_subscribers"][()] == 1 and got["a2a_live_tasks"][()] == 1
    finally:
        release.set()
        stream.close()
    server.shutdown()


def test_grpc_calls_are_counted_under_their_binding():
    if not grpc_available():
        need("grpcio", "pip install -e '.[test]'")
    from harness import GrpcClient
    server = a2a_min.Server(lambda ctx: "ok", metrics=True)
    client = GrpcClient(server)
    try:
        client.result("SendMessage", {"message": user_message("hi")})
        client.call("GetTask", {"id": "nope"})
    finally:
        client.close()
    got, _ = scrape(server)
    assert got["a2a_requests_total"] == {
        labels(method="SendMessage", binding="GRPC", outcome="ok"): 1,
        labels(method="GetTask", binding="GRPC", outcome="TaskNotFoundError"): 1}


def test_the_servers_authentication_guards_metrics_on_its_own_port():
    server = a2a_min.Server(lambda ctx: "ok", metrics=True,
                            authenticate=a2a_min.BearerAuth({"t0ken": "scraper"}))
    refused = server.handle_http("GET", "/metrics", "", {})
    assert refused.status == 401 and b"Bearer" in refused.body
    assert ("WWW-Authenticate", 'Bearer realm="a2a"') in refused.headers
    got, _ = scrape(server, {"authorization": "Bearer t0ken"})
    assert "a2a_store_tasks" in got


def test_metrics_on_an_address_of_their_own_need_no_credentials_and_leave_the_main_port():
    import a2a_metrics
    server = a2a_min.Server(lambda ctx: "ok", metrics=True,
                            authenticate=a2a_min.BearerAuth({"t0ken": "scraper"}))
    port = free_port()
    httpd = a2a_metrics.serve_metrics(server, "127.0.0.1", port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/metrics")
        resp = conn.getresponse()
        assert resp.status == 200 and resp.getheader("Content-Type").startswith("text/plain")
        assert "a2a_store_tasks" in families(resp.read().decode())
        conn.request("GET", "/other")
        resp = conn.getresponse()
        assert resp.status == 404 and resp.read()
        conn.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    main = server.handle_http("GET", "/metrics", "", {"authorization": "Bearer t0ken", **V1})
    assert main.status == 404


def test_off_there_is_no_metrics_route_and_no_companion_is_needed():
    server = a2a_min.Server(lambda ctx: "ok")
    assert server.metrics is None
    assert server.handle_http("GET", "/metrics", "", dict(V1)).status == 404


def test_label_values_are_escaped_as_the_text_format_says():
    import a2a_metrics
    server = a2a_min.Server(lambda ctx: "ok", metrics=True)
    server.metrics.observe('Odd"Method\\with\nlines', "JSONRPC", None, 0.001)
    got = families(server.metrics.render().decode())
    assert got["a2a_requests_total"] == {
        labels(method='Odd"Method\\with\nlines', binding="JSONRPC", outcome="ok"): 1}
    assert a2a_metrics.Metrics.MEDIA_TYPE.startswith("text/plain; version=0.0.4")


def test_the_command_line_serves_metrics_apart_when_given_an_address():
    port, metrics_port = free_port(), free_port()
    proc = run_host([sys.executable, "a2a_min.py", "--port", str(port), "--metrics",
                     f"127.0.0.1:{metrics_port}"], port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                              "params": {"message": user_message("hi")}}),
                     {"A2A-Version": "1.0", "Content-Type": "application/json"})
        assert conn.getresponse().read()
        conn.close()
        conn = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
        conn.request("GET", "/metrics")
        got = families(conn.getresponse().read().decode())
        conn.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert got["a2a_requests_total"] == {
        labels(method="SendMessage", binding="JSONRPC", outcome="ok"): 1}


def test_metrics_with_workers_is_refused_in_one_line(tmp_path):
    import subprocess
    done = subprocess.run([sys.executable, "-m", "a2a_cli", "serve", "--port", str(free_port()),
                           "--workers", "2", "--store", str(tmp_path / "tasks.db"), "--metrics"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0
    assert "--metrics counts the requests of one process" in done.stderr, done.stderr


def metrics_get(port, host=None):
    """GET /metrics on the listener at ``port`` (with ``host`` as its Host): status, body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", "/metrics", skip_host=host is not None)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_metrics_apart_answer_only_the_names_they_should():
    import a2a_metrics
    server = a2a_min.Server(lambda ctx: "ok", metrics=True, allowed_hosts=["a2a.internal"])
    port = free_port()
    httpd = a2a_metrics.serve_metrics(server, "127.0.0.1", port, allowed_hosts=["prom.internal"])
    try:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "prom.internal",
                     "a2a.internal:9464"):
            assert metrics_get(port, host)[0] == 200, host
        status, body = metrics_get(port, f"rebound.example:{port}")
        assert status == 421 and b"'rebound.example:" in body and b"allowed_hosts" in body
        status, body = metrics_get(port, "localhost:1@evil.example")
        assert status == 421 and b"'localhost:1@evil.example'" in body
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_metrics_apart_hold_at_most_max_connections_and_close_idle_ones():
    """Idle connections take the listener's places; one more is answered 503
    without a thread; once the listener closed the idle ones (timeout), a
    scrape is answered again."""
    import socket

    import a2a_metrics
    server = a2a_min.Server(lambda ctx: "ok", metrics=True)
    port = free_port()
    httpd = a2a_metrics.serve_metrics(server, "127.0.0.1", port, max_connections=3, timeout=0.5)
    idle = []
    try:
        for _ in range(3):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            idle[-1].send(b"GET /metr")                 # (a request begun, never finished)
        # The three are taken once the listener sees them: each one sent more waits its turn.
        extra = socket.create_connection(("127.0.0.1", port), timeout=10)
        extra.sendall(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        assert extra.makefile("rb").readline().startswith(b"HTTP/1.0 503")
        extra.close()
        for sock in idle:                               # the listener closes each idle one
            assert sock.recv(100) == b""
        deadline = time.monotonic() + 10
        while metrics_get(port)[0] != 200:              # (their threads let go of their places)
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        for sock in idle:
            sock.close()
        httpd.shutdown()
        httpd.server_close()


def test_metrics_apart_cut_a_request_that_trickles_and_want_one_host():
    """A request must arrive whole within ``timeout``: a client sending a byte
    now and then (each within the timeout) is cut at it, not kept by each
    byte, so a few such clients cannot keep every scrape at 503. HTTP/1.1
    without Host, or with two, is 400."""
    import socket

    import a2a_metrics
    server = a2a_min.Server(lambda ctx: "ok", metrics=True)
    port = free_port()
    httpd = a2a_metrics.serve_metrics(server, "127.0.0.1", port, max_connections=2, timeout=0.5)
    slow = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
    try:
        ended = [False, False]
        deadline = time.monotonic() + 10
        while not all(ended) and time.monotonic() < deadline:
            for i, sock in enumerate(slow):
                try:
                    sock.send(b"G")            # (a byte every 0.1 s: never idle for 0.5 s)
                except OSError:
                    ended[i] = True
            time.sleep(0.1)
        assert all(ended)
        while metrics_get(port)[0] != 200:     # (their threads let go of their places)
            assert time.monotonic() < deadline
            time.sleep(0.05)
        for head in (b"GET /metrics HTTP/1.1\r\n\r\n",
                     b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: 127.0.0.1\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                sock.sendall(head)
                assert sock.makefile("rb").readline().startswith(b"HTTP/1.0 400"), head
    finally:
        for sock in slow:
            sock.close()
        httpd.shutdown()
        httpd.server_close()


def test_refused_authentications_versions_and_03_errors_are_counted_as_errors():
    server = a2a_min.Server(lambda ctx: "ok", metrics=True, compat="0.3",
                            authenticate=a2a_min.BearerAuth({"t0ken": "alice"}))
    signed = {"authorization": "Bearer t0ken"}
    send = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                       "params": {"message": user_message("hi")}}).encode()
    json_v1 = {**dict(V1), "content-type": "application/json"}
    assert server.handle_http("POST", "/", "", json_v1, send).status == 401
    assert server.handle_http("POST", "/message:send", "", json_v1, send).status == 401
    assert json.loads(server.handle_http("POST", "/", "", {
        **json_v1, **signed, "a2a-version": "2.0"}, send).body)["error"]["code"] == -32009
    assert server.handle_http("GET", "/tasks/nope", "", {**signed, "a2a-version": "2.0"}
                              ).status == 400
    get_03 = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                         "params": {"id": "nope"}}).encode()
    assert "error" in json.loads(server.handle_http(
        "POST", "/", "", {"content-type": "application/json", **signed}, get_03).body)
    assert server.handle_http("GET", "/v1/tasks/nope", "", signed).status == 404
    got, _ = scrape(server, signed)
    assert got["a2a_requests_total"] == {
        labels(method="SendMessage", binding="JSONRPC", outcome="AuthenticationRequiredError"): 1,
        labels(method="SendMessage", binding="HTTP+JSON",
               outcome="AuthenticationRequiredError"): 1,
        labels(method="SendMessage", binding="JSONRPC", outcome="VersionNotSupportedError"): 1,
        labels(method="GetTask", binding="HTTP+JSON", outcome="VersionNotSupportedError"): 1,
        labels(method="GetTask", binding="JSONRPC", outcome="TaskNotFoundError"): 1,
        labels(method="GetTask", binding="HTTP+JSON", outcome="TaskNotFoundError"): 1}


def test_metrics_take_get_and_head_alone():
    server = a2a_min.Server(lambda ctx: "ok", metrics=True)
    assert server.handle_http("GET", "/metrics").status == 200
    assert server.handle_http("HEAD", "/metrics").status == 200
    refused = server.handle_http("POST", "/metrics", "", {"content-type": "application/json"},
                                 b"{}")
    assert refused.status == 405 and ("Allow", "GET") in refused.headers
    assert "use GET" in json.loads(refused.body)["error"]["message"]
