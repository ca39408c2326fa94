"""check URL: the quick conformance check, against our own server (nothing
fails) and against agents that are broken in the ways real ones are: HTML
instead of A2A, a half card, an agent that never answers."""

import http.server
import io
import json
import re
import socket
import subprocess
import sys
import threading
import time

import pytest

from harness import ROOT, Live
import a2a_client
import a2a_check
import a2a_cli
import a2a_min


def run_check(url, **options):
    out = io.StringIO()
    failed = a2a_check.check(url, out=out, **options)
    return failed, out.getvalue().splitlines()


@pytest.mark.parametrize("full", [False, True])
def test_our_own_server_passes(full):
    live = Live(a2a_min.demo_server(), timeout=5)
    try:
        failed, lines = run_check(live.url, full=full)
        tasks = json.loads(live.request("GET", "/tasks", headers={"A2A-Version": "1.0"})[1])
    finally:
        live.close()
    assert failed == 0, "\n".join(lines)
    verdicts = [line.split()[0] for line in lines[:-1]]
    assert set(verdicts) <= {"PASS", "SKIP"} and lines[-1] == "no failures"
    assert all(re.match(r"^(PASS|SKIP)  §[\d.]+ +\S", line) for line in lines[:-1]), lines
    assert tasks["totalSize"] == (4 if full else 1)        # as few messages as it can


def test_the_command_line_exit_status_suits_ci():
    live = Live(a2a_min.demo_server(), timeout=5)
    try:
        out, err = io.StringIO(), io.StringIO()
        assert a2a_cli.verbs_main(["check", live.url], out, err) == 0
    finally:
        live.close()
    assert "no failures" in out.getvalue()


def test_the_push_config_round_trip_when_the_card_declares_push():
    """Create, get, list, delete twice, get again: on the finished task, to a
    .invalid URL (RFC 6761: nothing resolves it), so nothing is delivered."""
    live = Live(a2a_min.demo_server(push_notifications=True), timeout=5)
    try:
        failed, lines = run_check(live.url)
    finally:
        live.close()
    text = "\n".join(lines)
    assert failed == 0, text
    for section, what in (("3.1.7", "CreateTaskPushNotificationConfig"),
                          ("3.1.8", "GetTaskPushNotificationConfig reads it back"),
                          ("3.1.9", "ListTaskPushNotificationConfigs lists it"),
                          ("3.1.10", "DeleteTaskPushNotificationConfig"),
                          ("3.1.10", r"DeleteTaskPushNotificationConfig again \(it is idempotent\)"),
                          ("3.1.8", "a deleted config is gone")):
        assert re.search(rf"^PASS  §{re.escape(section)} +{what}$", text, re.M), (what, text)


def test_a_push_config_that_is_not_kept_fails_the_round_trip():
    """The same round trip against an agent whose store forgets configs: the
    check must notice (a check that cannot fail is no check)."""
    server = a2a_min.demo_server(push_notifications=True)
    server.store.put_config = lambda task_id, config, limit: None
    live = Live(server, timeout=5)
    try:
        failed, lines = run_check(live.url)
    finally:
        live.close()
    text = "\n".join(lines)
    assert failed == 1 and re.search(r"^PASS  §3\.1\.7 ", text, re.M), text
    assert re.search(r"^FAIL  §3\.1\.8 +GetTaskPushNotificationConfig reads it back: "
                     r"TaskNotFoundError", text, re.M), text


class _Broken(http.server.BaseHTTPRequestHandler):
    """An agent that is not one: its card and its answers are what ``mode`` says."""
    mode = "html"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.mode == "forever" and self.path.endswith("agent-card.json"):
            port = self.server.server_address[1]
            return self.answer(200, "application/json", json.dumps({
                "name": "forever", "description": "streams for ever", "version": "1",
                "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
                "defaultOutputModes": ["text/plain"], "skills": [], "supportedInterfaces": [
                    {"url": f"http://127.0.0.1:{port}/", "protocolBinding": "JSONRPC",
                     "protocolVersion": "1.0"}]}).encode())
        if self.mode == "half card" and self.path.endswith("agent-card.json"):
            port = self.server.server_address[1]
            return self.answer(200, "application/json", json.dumps({
                "name": "half", "supportedInterfaces": [
                    {"url": f"http://127.0.0.1:{port}/", "protocolBinding": "JSONRPC",
                     "protocolVersion": "1.0"}]}).encode())
        if self.mode == "hang":
            time.sleep(30)
        self.answer(200, "text/html", b"<html><body>Welcome to our website</body></html>")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.mode == "forever" and b"SendStreamingMessage" in body:
            return self.keep_alive_for_ever()
        if self.mode == "hang":
            time.sleep(30)
        self.answer(200, "text/html", b"<html>nope</html>")

    def keep_alive_for_ever(self):
        """A stream that opens with a task and then only ever keeps alive."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        task = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}
        self.wfile.write(b"data: " + json.dumps({"jsonrpc": "2.0", "id": 1, "result": {
            "task": task}}).encode() + b"\n\n")
        for _ in range(600):                     # a minute at most: the test ends it sooner
            try:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)

    def answer(self, status, kind, body):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def broken(request):
    handler = type("Handler", (_Broken,), {"mode": request.param})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("broken", ["html"], indirect=True)
def test_an_html_page_is_a_failed_card(broken):
    failed, lines = run_check(broken)
    assert failed == 1 and lines[0].startswith("FAIL  §8.2     the agent card: "), lines
    assert "html" in lines[0].lower() and lines[-1] == "1 failed", lines


@pytest.mark.parametrize("broken", ["half card"], indirect=True)
def test_a_half_card_and_html_answers_are_reported_with_sections_and_curl_lines(broken):
    started = time.monotonic()
    failed, lines = run_check(broken, timeout=5)
    assert time.monotonic() - started < 30
    text = "\n".join(lines)
    assert failed >= 3, text
    assert re.search(r"^FAIL  §4\.4\.1 +the card's required fields: missing description, version",
                     text, re.M), text
    assert re.search(r"^FAIL  §9\.5 +invalid JSON is a parse error", text, re.M), text
    assert re.search(r"^      reproduce: curl -sS .*http://127\.0\.0\.1:\d+/", text, re.M), text
    assert lines[-1] == f"{failed} failed"


@pytest.mark.parametrize("broken", ["hang"], indirect=True)
def test_an_agent_that_never_answers_is_reported_within_the_timeout(broken):
    started = time.monotonic()
    failed, lines = run_check(broken, timeout=1)
    assert failed == 1 and "did not answer within 1" in lines[0], lines
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("broken", ["forever"], indirect=True)
def test_a_stream_that_never_ends_is_cut_and_reported(broken):
    started = time.monotonic()
    failed, lines = run_check(broken, full=True, timeout=1)
    text = "\n".join(lines)
    assert time.monotonic() - started < 20, text
    assert re.search(r"^FAIL  §3\.1\.2 +SendStreamingMessage: the stream went on past the time "
                     r"given to it", text, re.M), text


def test_the_reference_sdk_server_is_checked_and_its_deviations_named():
    """The reference SDK's server (a2a-sdk 1.3, the test extra), with the
    benchmarks' echo agent: what check reports of an implementation not ours."""
    import os
    import subprocess
    import sys
    from harness import ROOT, free_port, require_sdk
    require_sdk()
    port = free_port()
    sdk = subprocess.Popen([sys.executable, os.path.join(ROOT, "benchmarks", "sdk_echo_server.py"),
                            str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        failed, lines = run_check(f"http://127.0.0.1:{port}", full=True)
    finally:
        sdk.terminate()
        sdk.wait(10)
    text = "\n".join(lines)
    assert all(re.match(r"^(PASS|FAIL|WARN|SKIP)  §[\d.]+ ", line) or
               line.startswith("      reproduce: ") for line in lines[:-1]), text
    # The SDK's streams carry no SSE ids (nothing to resume from), and its card
    # no Cache-Control (section 8.6, a SHOULD): WARNs, not FAILs.
    assert re.search(r"^WARN  §3\.5\.2 +stream events carry SSE ids", text, re.M), text
    assert re.search(r"^WARN  §8\.6 +the card's caching headers: no Cache-Control max-age",
                     text, re.M), text
    # What it does as the specification says is PASS, section by section.
    for section in ("9.5", "3.6.2", "3.1.1", "3.1.3", "3.1.4", "3.2.4", "3.1.5", "3.1.6",
                    "3.1.9", "3.1.11", "11.6", "11.3", "5.1", "3.1.2"):
        assert re.search(rf"^PASS  §{re.escape(section)} ", text, re.M), (section, text)
    assert lines[-1] == (f"{failed} failed" if failed else "no failures")


def test_card_interfaces_at_wildcard_local_or_plain_addresses_are_warned():
    out = io.StringIO()
    run = a2a_check._Check("https://agent.example", out, 5, None, None)
    run.keys = None
    card = {"name": "n", "description": "d", "version": "1", "capabilities": {},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [], "supportedInterfaces": [
                {"url": "http://0.0.0.0:8000/", "protocolBinding": "JSONRPC",
                 "protocolVersion": "1.0"},
                {"url": "http://localhost:8000", "protocolBinding": "HTTP+JSON",
                 "protocolVersion": "1.0"},
                {"url": "http://agent.example/rpc", "protocolBinding": "JSONRPC",
                 "protocolVersion": "1.0"}]}
    a2a_check._check_card(run, card, "https://agent.example/.well-known/agent-card.json")
    text = out.getvalue()
    assert re.search(r"^WARN  §8\.3\.1 +JSONRPC interface http://0\.0\.0\.0:8000/: a wildcard",
                     text, re.M), text
    assert re.search(r"^WARN  §8\.3\.1 +HTTP\+JSON interface http://localhost:8000: a local",
                     text, re.M), text
    assert re.search(r"^WARN  §7\.1 +JSONRPC interface http://agent\.example/rpc: plain http",
                     text, re.M), text
    assert "8.6" not in text               # (no request was made: the card alone is judged)


def test_a_card_listing_another_local_port_and_a_failing_agent_are_warned():
    """Two things a newcomer met: --public-url left at the README's port while
    the server listens on another; an agent whose every task fails (the
    protocol held, the agent did not)."""
    def failing(text):
        raise RuntimeError("the model is not configured")
    live = Live(a2a_min.Server(failing, public_url="http://127.0.0.1:1"), timeout=5)
    try:
        failed, lines = run_check(live.url, timeout=2)
    finally:
        live.close()
    text = "\n".join(lines)
    assert re.search(r"^WARN  §8\.3\.1 +JSONRPC interface http://127\.0\.0\.1:1/: another port "
                     r"than the card's", text, re.M), text
    live = Live(a2a_min.Server(failing), timeout=5)
    try:
        failed, lines = run_check(live.url)
    finally:
        live.close()
    text = "\n".join(lines)
    assert failed == 0 and re.search(r"^WARN  §3\.1\.1 +the agent's task ended failed: ", text,
                                     re.M), text


# -- issue 33: credentials, and the timeout --------------------------------------------------

def bearer_agent():
    import os
    import sys
    from harness import ROOT
    if os.path.join(ROOT, "examples") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "examples"))
    import bearer_agent
    return bearer_agent


def bearer_live():
    return Live(bearer_agent().make_server(), timeout=5)


def test_check_with_credentials_sends_them_on_every_request():
    """--auth reaches the raw requests (JSON-RPC's and HTTP+JSON's error
    tables) too, not only the client's calls: against examples/bearer_agent.py
    nothing fails."""
    live = bearer_live()
    try:
        failed, lines = run_check(live.url, auth="Bearer alice-secret", full=True)
    finally:
        live.close()
    text = "\n".join(lines)
    assert failed == 0, text
    assert "-31401" not in text and "credentials" not in text, text
    for what in ("an unsupported A2A-Version is refused", "an A2A error's data carries an "
                 "ErrorInfo", "HTTP\\+JSON errors: a missing task is 404 NOT_FOUND"):
        assert re.search(rf"^PASS  §[\d.]+ +{what}", text, re.M), (what, text)


def test_check_without_the_credentials_an_agent_needs_says_so_once_and_skips():
    live = bearer_live()
    try:
        out, err = io.StringIO(), io.StringIO()
        status = a2a_cli.verbs_main(["check", live.url], out, err)
    finally:
        live.close()
    lines = out.getvalue().splitlines()
    text = "\n".join(lines)
    assert status == 0 and "FAIL" not in text, text
    needs = [line for line in lines if "credentials" in line and not line.startswith("SKIP")]
    assert needs == ["this agent needs credentials: Bearer credentials (bearer): --auth "
                     "'Bearer <token>' (what needs them is skipped)"], text
    assert re.search(r"^SKIP  §3\.1 +the operations .*: no credentials$", text, re.M), text
    assert len([line for line in lines if line.startswith("SKIP")]) <= 3, text
    assert lines[-1] == "no failures"


def test_a_failure_reproduces_with_the_credentials_named_not_shown():
    """A FAIL's curl line carries the credentials' header, as $A2A_AUTH."""
    server = bearer_agent().make_server()
    server.capabilities["pushNotifications"] = True
    server.store.put_config = lambda task_id, config, limit: None     # (a config forgotten)
    live = Live(server, timeout=5)
    try:
        failed, lines = run_check(live.url, auth="Bearer alice-secret")
    finally:
        live.close()
    text = "\n".join(lines)
    assert failed >= 1, text
    reproduce = [line for line in lines if line.startswith("      reproduce: ")]
    assert reproduce and all('-H "Authorization: $A2A_AUTH"' in line for line in reproduce), text
    assert "alice-secret" not in text


def test_the_command_line_check_waits_10_seconds_as_the_readme_says(monkeypatch):
    """check's --timeout is CHECK_TIMEOUT, 10 s, unless given (the other
    verbs' is 30 s); waited for here with CHECK_TIMEOUT made 1 s, so the
    test does not sleep 10 s."""
    assert a2a_check.CHECK_TIMEOUT == 10.0
    monkeypatch.setattr(a2a_check, "CHECK_TIMEOUT", 1.0)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()                      # accepts (the kernel does), never answers
        out, err = io.StringIO(), io.StringIO()
        started = time.monotonic()
        status = a2a_cli.verbs_main(["check", "http://127.0.0.1:%d" % silent.getsockname()[1]],
                                 out, err)
    assert status == 1 and "did not answer within 1.0 s" in out.getvalue(), out.getvalue()
    assert time.monotonic() - started < 10
    done = subprocess.run([sys.executable, "a2a_min.py", "check", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert "(default 30; check: 10)" in " ".join(done.stdout.split()), done.stdout
