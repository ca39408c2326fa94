"""Who may call a server without authentication (a2a_min.py, "Who may
call"): a page of another site must not drive it, whether by a simple POST
(no Content-Type, or text/plain, with ?A2A-Version=1.0), by a preflighted
JSON POST, or by DNS rebinding (a name the attacker points at 127.0.0.1).
In process, through both bundled HTTP servers on real sockets, and in a
real browser (Debian's Chromium): a page on another port of 127.0.0.1 is
another origin, exactly as a page of another site is."""

import http.server
import json
import threading

import pytest

import a2a_min
from harness import AsyncioHostClient, ThreadsHostClient, exchange, rpc_body, user_message
from test_console import browser  # noqa: F401  (the fixture: Chromium, or a skip saying why)

SEND = rpc_body("SendMessage", {"message": user_message("run this")})


def recording_server(**options):
    """A server whose agent notes every text it is given: nothing may reach it."""
    calls = []

    def agent(text):
        calls.append(text)
        return text
    server = a2a_min.Server(agent, **options)
    server.calls = calls
    return server


def call(server, method, path, headers, body=b"", query=""):
    return server.handle_http(method, path, query, headers, body, "http://127.0.0.1:8000")


def error_of(response):
    return json.loads(response.body)["error"]


# -- in process: the rules ----------------------------------------------------------------

@pytest.mark.parametrize("ctype", [None, "text/plain", "text/plain;charset=UTF-8",
                                   "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_post_that_does_not_say_json_is_refused_with_415_and_a_hint(ctype):
    server = recording_server()
    headers = {"a2a-version": "1.0"} | ({"content-type": ctype} if ctype else {})
    response = call(server, "POST", "/", headers, SEND)
    assert response.status == 415, response.body
    error = error_of(response)
    assert error["code"] == -32005 and "Content-Type: application/json" in error["message"]
    # The same through the query's version, which is what a page's simple request can set.
    response = call(server, "POST", "/", {} if ctype is None else {"content-type": ctype},
                    SEND, query="A2A-Version=1.0")
    assert response.status == 415
    # And on HTTP+JSON, bodyless POSTs included (a form could cancel a task).
    for path, body in (("/message:send", SEND), ("/tasks/t-1:cancel", b"")):
        response = call(server, "POST", path, {} if ctype is None else {"content-type": ctype},
                        body, query="A2A-Version=1.0")
        assert response.status == 415 and "Content-Type" in json.loads(response.body)[
            "error"]["message"]
    assert server.calls == []


@pytest.mark.parametrize("ctype", ["application/json", "application/a2a+json",
                                   "application/json; charset=utf-8", "Application/JSON"])
def test_json_posts_are_served(ctype):
    server = recording_server()
    response = call(server, "POST", "/", {"a2a-version": "1.0", "content-type": ctype}, SEND)
    assert response.status == 200 and "result" in json.loads(response.body)
    assert server.calls == ["run this"]


def test_a_bodyless_post_with_the_version_header_needs_no_content_type():
    """What the reference SDK's client sends for :subscribe and :cancel; a page
    cannot set A2A-Version without a preflight, which it does not pass."""
    server = recording_server()
    task = json.loads(call(server, "POST", "/message:send", {
        "a2a-version": "1.0", "content-type": "application/json"},
        json.dumps({"message": user_message("wait")}).encode()).body)["task"]
    response = call(server, "POST", f"/tasks/{task['id']}:cancel", {"a2a-version": "1.0"})
    assert response.status in (200, 400), response.body       # served: canceled, or not cancelable
    assert b"Content-Type" not in response.body
    with_body = call(server, "POST", "/message:send", {"a2a-version": "1.0"}, SEND)
    assert with_body.status == 415


def test_the_version_in_the_query_counts_on_every_request_a_page_must_ask_to_send():
    """Section 3.6.1: the version may be a request parameter. A GET (EventSource),
    and a POST that says its body is JSON, or a DELETE, which a page of another
    site can send only after a preflight; never a POST it can send unasked."""
    server = recording_server()
    json_type = {"content-type": "application/json"}
    assert call(server, "GET", "/tasks", {}, query="A2A-Version=1.0").status == 200
    response = call(server, "POST", "/", json_type, SEND, query="A2A-Version=1.0")
    assert response.status == 200 and "result" in json.loads(response.body), response.body
    response = call(server, "POST", "/message:send", json_type,
                    json.dumps({"message": user_message("run that")}).encode(),
                    query="A2A-Version=1.0")
    assert response.status == 200, response.body
    task = json.loads(response.body)["task"]
    response = call(server, "DELETE", f"/tasks/{task['id']}/pushNotificationConfigs/none",
                    {}, query="A2A-Version=1.0")             # (served: this agent has no push)
    assert b"PUSH_NOTIFICATION_NOT_SUPPORTED" in response.body, response.body
    assert error_of(call(server, "POST", "/", json_type, SEND))["code"] == -32009
    for ctype in ({}, {"content-type": "text/plain"}):                 # what a page sends unasked
        assert call(server, "POST", "/", ctype, SEND, query="A2A-Version=1.0").status == 415
    assert server.calls == ["run this", "run that"]


@pytest.mark.parametrize("host", ["rebind.attacker.example", "rebind.attacker.example:8000",
                                  "localhost.attacker.example", "127.0.0.1.nip.io:8000"])
def test_a_host_the_server_does_not_answer_to_gets_421_naming_the_option(host):
    server = recording_server()
    response = call(server, "POST", "/", {"host": host, "a2a-version": "1.0",
                                          "content-type": "application/json"}, SEND)
    assert response.status == 421
    message = error_of(response)["message"]
    assert "--allow-host" in message and "allowed_hosts" in message and "rebinding" in message
    listed = call(server, "GET", "/tasks", {"host": host}, query="A2A-Version=1.0")
    assert listed.status == 421 and b"tasks" not in listed.body.replace(b"--allow-host", b"")
    assert server.calls == []


def test_the_names_a_server_answers_to():
    server = recording_server(allowed_hosts=["agents.internal"],
                              public_url="https://agent.example.com/a2a")
    for host in ("localhost", "localhost:8000", "LOCALHOST.", "agents.internal:9000",
                 "agent.example.com", "127.0.0.1:8000", "[::1]:8000", "10.1.2.3"):
        assert call(server, "GET", "/tasks", {"host": host},
                    query="A2A-Version=1.0").status == 200, host
    assert call(server, "GET", "/tasks", {"host": "other.example"},
                query="A2A-Version=1.0").status == 421
    # A host adapter bound to one address: only that address (and the names) will do.
    server.allow_hosts(["127.0.0.1"], bound=True)
    assert call(server, "GET", "/tasks", {"host": "10.1.2.3"}, query="A2A-Version=1.0").status \
        == 421
    assert call(server, "GET", "/tasks", {"host": "[::1]:80"}, query="A2A-Version=1.0").status \
        == 200
    # "*": any name (behind a proxy that checks Host itself).
    anyone = recording_server(allowed_hosts=["*"])
    assert call(anyone, "GET", "/tasks", {"host": "whatever.example"},
                query="A2A-Version=1.0").status == 200


@pytest.mark.parametrize("host", ["localhost:1@evil.example", "localhost@evil.example",
                                  "localhost:8000/evil", "localhost:80a", "local host",
                                  "localhost\\evil.example", "[::1", "localhost:8000#x"])
def test_a_host_header_that_is_not_a_host_and_port_is_400_with_a_hint(host):
    """The card's URLs are made of Host: only the part before its first ':' was
    checked, so 'localhost:1@evil.example' passed, and the card advertised
    http://localhost:1@evil.example/. With allowed_hosts=["*"] too."""
    for server in (recording_server(), recording_server(allowed_hosts=["*"])):
        for path in ("/.well-known/agent-card.json", "/.well-known/api-catalog", "/tasks"):
            response = server.handle_http("GET", path, "A2A-Version=1.0", {"host": host}, b"",
                                          f"http://{host}")
            assert response.status == 400, (host, path, response.body)
            assert "Host: localhost:8000" in json.loads(response.body)["error"]["message"]
        response = call(server, "POST", "/", {"host": host, "a2a-version": "1.0",
                                              "content-type": "application/json"}, SEND)
        assert response.status == 400 and "RFC 3986" in error_of(response)["message"]
        assert server.calls == []


def test_a_card_made_of_the_host_header_varies_by_it():
    """A shared cache must not hand one Host's card (public, max-age) to
    another: Vary: Host, unless public_url fixes the URLs."""
    for server, varies in ((recording_server(), True),
                           (recording_server(public_url="https://agent.example.com/"), False)):
        for path in ("/.well-known/agent-card.json", "/.well-known/api-catalog"):
            response = call(server, "GET", path, {"host": "localhost:8000"})
            assert response.status == 200
            assert (("Vary", "Host") in response.headers) is varies, (path, response.headers)
        etag = dict(call(server, "GET", "/.well-known/agent-card.json", {}).headers)["ETag"]
        again = call(server, "GET", "/.well-known/agent-card.json", {"if-none-match": etag})
        assert again.status == 304 and (("Vary", "Host") in again.headers) is varies


def test_a_preflight_from_an_origin_not_named_is_refused():
    server = recording_server()
    response = call(server, "OPTIONS", "/", {
        "origin": "https://evil.example", "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,a2a-version"})
    assert response.status == 403
    assert not any(name.lower().startswith("access-control") for name, _ in response.headers)
    assert "--cors-origin https://evil.example" in error_of(response)["message"]
    # Not from a browser: what the server allows, nothing more.
    plain = call(server, "OPTIONS", "/", {})
    assert plain.status == 204 and ("Allow", "GET, POST, DELETE, OPTIONS") in plain.headers


def test_a_named_origin_may_call_and_read():
    server = recording_server(cors_origins=["https://app.example"])
    pre = call(server, "OPTIONS", "/message:send", {
        "origin": "https://app.example", "access-control-request-method": "POST"})
    headers = dict(pre.headers)
    assert pre.status == 204 and headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "Content-Type" in headers["Access-Control-Allow-Headers"]
    response = call(server, "POST", "/", {"origin": "https://app.example", "a2a-version": "1.0",
                                          "content-type": "application/json"}, SEND)
    assert dict(response.headers)["Access-Control-Allow-Origin"] == "https://app.example"
    other = call(server, "POST", "/", {"origin": "https://evil.example", "a2a-version": "1.0",
                                       "content-type": "application/json"}, SEND)
    assert not any(name == "Access-Control-Allow-Origin" for name, _ in other.headers)


def test_the_card_stays_readable_from_anywhere():
    server = recording_server()
    card = call(server, "GET", "/.well-known/agent-card.json", {"origin": "https://x.example"})
    assert card.status == 200 and ("Access-Control-Allow-Origin", "*") in card.headers
    pre = call(server, "OPTIONS", "/.well-known/agent-card.json", {"origin": "https://x.example"})
    assert pre.status == 204 and ("Access-Control-Allow-Origin", "*") in pre.headers


def test_cookie_authentication_refuses_a_bodyless_form_post():
    server = a2a_min.Server(lambda text: text, authenticate=a2a_min.ApiKeyAuth(
        {"k": "alice"}, name="session", location="cookie"))
    headers = {"cookie": "session=k", "a2a-version": "1.0", "content-type": "application/json"}
    task = json.loads(call(server, "POST", "/", headers, rpc_body(
        "SendMessage", {"message": user_message("x")})).body)["result"]["task"]
    form = {"cookie": "session=k", "content-type": "application/x-www-form-urlencoded"}
    response = call(server, "POST", f"/tasks/{task['id']}:cancel", form, b"",
                    query="A2A-Version=1.0")
    assert response.status == 415


def test_the_0_3_routes_keep_the_same_rules():
    pytest.importorskip("a2a_v03")
    server = a2a_min.Server(lambda text: text, compat="0.3")
    body = json.dumps({"message": {"messageId": "m", "role": "user",
                                   "parts": [{"kind": "text", "text": "x"}]}}).encode()
    response = call(server, "POST", "/v1/message:send", {"content-type": "text/plain"}, body)
    assert response.status == 415
    response = call(server, "POST", "/v1/message:send",
                    {"content-type": "application/json", "host": "rebind.attacker.example"}, body)
    assert response.status == 421


# -- both bundled HTTP servers, on real sockets -----------------------------------------

@pytest.fixture(params=[ThreadsHostClient, AsyncioHostClient], ids=["threads", "asyncio"])
def host(request):
    client = request.param(recording_server())
    yield client
    client.close()


def test_a_rebound_name_gets_421_from_the_real_servers(host):
    head = (f"POST /?A2A-Version=1.0 HTTP/1.1\r\nHost: rebind.attacker.example:{host.port}\r\n"
            f"Content-Type: application/json\r\nA2A-Version: 1.0\r\n"
            f"Content-Length: {len(SEND)}\r\nConnection: close\r\n\r\n").encode()
    got = exchange(host.port, head + SEND)
    assert got.startswith(b"HTTP/1.1 421 "), got[:200]
    assert b"--allow-host" in got and host.server.calls == []
    listed = exchange(host.port, b"GET /tasks?A2A-Version=1.0 HTTP/1.1\r\n"
                                 b"Host: rebind.attacker.example\r\nConnection: close\r\n\r\n")
    assert listed.startswith(b"HTTP/1.1 421 "), listed[:200]
    ok = exchange(host.port, f"GET /tasks?A2A-Version=1.0 HTTP/1.1\r\nHost: 127.0.0.1:"
                             f"{host.port}\r\nConnection: close\r\n\r\n".encode())
    assert ok.startswith(b"HTTP/1.1 200 "), ok[:200]


def test_a_blob_post_gets_415_from_the_real_servers(host):
    head = (f"POST /?A2A-Version=1.0 HTTP/1.1\r\nHost: 127.0.0.1:{host.port}\r\n"
            f"Origin: http://evil.example\r\nContent-Length: {len(SEND)}\r\n"
            f"Connection: close\r\n\r\n").encode()
    got = exchange(host.port, head + SEND)
    assert got.startswith(b"HTTP/1.1 415 "), got[:200]
    assert b"Access-Control-Allow-Origin" not in got and host.server.calls == []


# -- a real browser: a page of another origin --------------------------------------------

ATTACK = """<!doctype html><meta charset="utf-8"><title>another site</title><script>
const target = %(target)s, body = %(body)s;
async function attempt(name, make) {
  try { const r = await make(); results[name] = "status " + r.status + " " + (await r.text()).slice(0, 80); }
  catch (e) { results[name] = "blocked: " + e.name; }
}
const results = {};
window.done = (async () => {
  await attempt("blob", () => fetch(target + "/?A2A-Version=1.0",
      {method: "POST", mode: "no-cors", body: new Blob([body])}));
  await attempt("text", () => fetch(target + "/?A2A-Version=1.0",
      {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body}));
  await attempt("json", () => fetch(target + "/", {method: "POST", body,
      headers: {"Content-Type": "application/json", "A2A-Version": "1.0"}}));
  await attempt("list", () => fetch(target + "/tasks?A2A-Version=1.0"));
  await attempt("card", () => fetch(target + "/.well-known/agent-card.json"));
  return results;
})();
</script>"""


class _Page(http.server.BaseHTTPRequestHandler):
    html = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.html)))
        self.end_headers()
        self.wfile.write(self.html)

    def log_message(self, *args):
        pass


def serve_page(html):
    """Another origin: a plain web server on another port of 127.0.0.1."""
    handler = type("Page", (_Page,), {"html": html.encode()})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    return httpd


@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "named"])
def test_browser_a_page_of_another_origin_cannot_drive_the_server(browser, named):
    from harness import Live
    page = None
    try:
        page = serve_page("")
        origin = f"http://127.0.0.1:{page.server_address[1]}"
        server = recording_server(cors_origins=[origin] if named else [])
        live = Live(server, timeout=5)
        try:
            page.RequestHandlerClass.html = (ATTACK % {
                "target": json.dumps(live.url), "body": json.dumps(SEND.decode())}).encode()
            browser.get(origin + "/")
            results = browser.execute_script("return await window.done;")
        finally:
            live.close()
    finally:
        if page is not None:
            page.shutdown()
            page.server_close()
    # An opaque answer (no-cors) says nothing; what matters is that the agent never ran.
    assert results["card"].startswith("status 200"), results
    if not named:
        assert server.calls == [], results
        assert results["json"] == "blocked: TypeError", results     # the preflight said no
        assert results["list"] == "blocked: TypeError", results     # not readable
    else:
        assert server.calls == ["run this"], results               # the JSON POST only
        assert results["json"].startswith("status 200"), results
        assert results["list"].startswith("status 200"), results

