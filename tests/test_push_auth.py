"""Push notifications (webhooks), authentication, per-caller scoping and the
extended card, over every binding, with a real webhook receiver on 127.0.0.1.
Webhook URLs in these tests name only 127.0.0.1, localhost, addresses that
are refused before any connection, or .invalid names (RFC 2606, never resolve);
public addresses appear only in pure checks of the SSRF guard (resolve=False),
and hooks.rebind.test only through a stand-in resolver that answers 127.0.0.1."""

import ipaddress
import json
import logging
import socket
import ssl
import subprocess
import threading
import time

import pytest

import a2a_min
from harness import V1, need, scenario_agent, user_message
from webhook_receiver import Receiver, Tarpit

LOOPBACK = ["127.0.0.1/32"]


@pytest.fixture
def receiver():
    r = Receiver(stall=3.0)
    yield r
    r.close()


def push_server(**options):
    options = {"push_allow": LOOPBACK, "push_backoff": 0.01, "push_timeout": 1.0, **options}
    return a2a_min.Server(scenario_agent, push_notifications=True, **options)


def states(requests):
    return [r["body"]["statusUpdate"]["status"]["state"] for r in requests
            if "statusUpdate" in r["body"]]


# -- configuration ------------------------------------------------------------------

def test_push_config_crud(make_client, receiver):
    client = make_client(push_server())
    task = client.send("wait")["task"]
    created = client.result("CreateTaskPushNotificationConfig", {
        "taskId": task["id"], "url": receiver.url(), "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "secret"}})
    assert created["taskId"] == task["id"] and created["id"] and created["url"] == receiver.url()
    named = client.result("CreateTaskPushNotificationConfig", {
        "taskId": task["id"], "id": "mine", "url": receiver.url("/other")})
    assert named["id"] == "mine"
    got = client.result("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "mine"})
    assert got == named
    listed = client.result("ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    assert [c["id"] for c in listed["configs"]] == [created["id"], "mine"]
    page = client.result("ListTaskPushNotificationConfigs", {"taskId": task["id"], "pageSize": 1})
    assert len(page["configs"]) == 1 and page["nextPageToken"]
    rest = client.result("ListTaskPushNotificationConfigs", {
        "taskId": task["id"], "pageSize": 1, "pageToken": page["nextPageToken"]})
    assert [c["id"] for c in rest["configs"]] == ["mine"]
    assert client.result("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "mine"}) == {}
    assert client.result("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "mine"}) == {}
    # A config id the task does not have: TaskNotFoundError (section 3.1.8).
    assert client.error("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "mine"})["code"] == -32001
    assert client.error("CreateTaskPushNotificationConfig", {
        "taskId": "nope", "url": receiver.url()})["code"] == -32001


def test_configs_on_finished_tasks_and_the_card(client):
    server = push_server()
    card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
    assert card["capabilities"]["pushNotifications"] is True
    c = type(client)(server)
    done = c.send("x")["task"]
    made = c.result("CreateTaskPushNotificationConfig", {"taskId": done["id"],
                                                          "url": "https://hooks.invalid/a"})
    assert c.result("GetTaskPushNotificationConfig", {"taskId": done["id"], "id": made["id"]})
    if hasattr(c, "close"):
        c.close()


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/h", "http://[::1]/h", "http://10.1.2.3/h", "http://169.254.169.254/latest",
    "http://192.168.0.1/h", "http://0.0.0.0/h", "http://224.0.0.1/h", "ftp://hooks.invalid/h",
    "file:///etc/passwd", "http://user:pw@hooks.invalid/h", "http://hooks.invalid:0/h",
    "http://hooks.invalid:99999/h", "http:///nohost", "http://100.64.0.1/h", "http://[fec0::1]/h",
    "http://[2002:a00:1::1]/h", "http://[::ffff:127.0.0.1]/h", "http://[64:ff9b::a9fe:a9fe]/h",
    "http://[ff02::1]/h", "http://[::1/h", "http://hooks..invalid/h", "http://ho%0aoks.invalid/h",
    # Control characters (urlsplit drops LF, CR and TAB, so the URL parsed; the log got them raw).
    "https://hooks.invalid/h\nforged log line", "https://hooks.invalid/h\r",
    "https://hoo\nks.invalid/h", "https://hooks.invalid/\x1b[2Jh", "https://hooks.invalid/h\tx",
    "https://hooks.invalid/\x85h"])
def test_unsafe_webhooks_are_refused_at_creation(url):
    server = a2a_min.Server(scenario_agent, push_notifications=True)   # nothing allowed
    from harness import Client
    c = Client(server)
    task = c.send("wait")["task"]
    error = c.error("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url})
    assert error["code"] == -32602 and error["data"][1]["fieldViolations"][0]["field"] == "url"


def test_line_breaks_in_credentials_are_refused(client):
    c = type(client)(push_server())
    task = c.send("wait")["task"]
    for config in ({"token": "a\r\nX-Evil: 1"},
                   {"authentication": {"scheme": "Bearer", "credentials": "x\ny"}}):
        error = c.error("CreateTaskPushNotificationConfig", {
            "taskId": task["id"], "url": "https://hooks.invalid/h", **config})
        assert error["code"] == -32602
    if hasattr(c, "close"):
        c.close()


def test_config_cap_per_task():
    from harness import Client
    c = Client(push_server(max_push_configs=2))
    task = c.send("wait")["task"]
    for i in range(2):
        c.result("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": f"https://h{i}.invalid/"})
    assert c.error("CreateTaskPushNotificationConfig", {
        "taskId": task["id"], "url": "https://h9.invalid/"})["code"] == -32602


def test_push_off_refuses_inline_configs(client):
    error = client.error("SendMessage", {"message": user_message("x"), "configuration": {
        "taskPushNotificationConfig": {"url": "https://hooks.invalid/h"}}})
    assert error["code"] == -32003


# -- delivery ---------------------------------------------------------------------------

def test_inline_config_delivers_every_event_in_order_with_headers(make_client, receiver):
    client = make_client(push_server())
    config = {"url": receiver.url(), "token": "tok-1",
              "authentication": {"scheme": "Bearer", "credentials": "cred-1"}}
    task = client.result("SendMessage", {"message": user_message("chunks"), "configuration": {
        "taskPushNotificationConfig": config}})["task"]
    got = receiver.wait(7)
    # Each chunk as it was made, then the empty one that ends the artifact (lastChunk).
    assert [list(r["body"])[0] for r in got] == [
        "task", "statusUpdate", "artifactUpdate", "artifactUpdate", "artifactUpdate",
        "artifactUpdate", "statusUpdate"]
    assert got[5]["body"]["artifactUpdate"]["lastChunk"]
    assert states(got) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert got[0]["body"]["task"]["id"] == task["id"]
    for r in got:
        assert r["headers"]["content-type"] == "application/a2a+json"
        assert r["headers"]["authorization"] == "Bearer cred-1"
        assert r["headers"]["x-a2a-notification-token"] == "tok-1"
    deadline = time.monotonic() + 5
    while client.server.push_stats["delivered"] < 7 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.server.push_stats["delivered"] == 7


def test_config_added_later_gets_the_following_events(client, receiver):
    c = type(client)(push_server())
    task = c.send("wait")["task"]
    c.result("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": receiver.url()})
    c.result("SendMessage", {"message": user_message("more", taskId=task["id"])})
    got = receiver.wait(5)         # the task, WORKING, the artifact, its end, COMPLETED
    assert "task" in got[0]["body"] and states(got)[-1] == "TASK_STATE_COMPLETED"
    # The turn's delivery begins with the task as the message left it: WORKING,
    # never back to SUBMITTED (nor anything after it).
    assert got[0]["body"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert got[0]["body"]["task"]["history"][-1]["parts"] == [{"text": "more"}]
    assert "TASK_STATE_SUBMITTED" not in states(got)
    if hasattr(c, "close"):
        c.close()


def test_retries_after_server_errors(receiver):
    from harness import Client
    server = push_server()
    c = Client(server)
    task = c.send("wait")["task"]
    c.result("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": receiver.url("/fail/2")})
    c.result("CancelTask", {"id": task["id"]})
    got = receiver.wait(3, "/fail/2")
    assert len(got) == 3 and all(states([r]) == ["TASK_STATE_CANCELED"] for r in got)
    time.sleep(0.1)
    assert server.push_stats["retried"] == 2 and server.push_stats["delivered"] == 1


def test_failing_hanging_redirecting_webhooks_never_block_requests(receiver):
    from harness import Client
    server = push_server(push_retries=1)
    c = Client(server)
    task = c.send("wait")["task"]
    for path in ("/stall", "/fail/99", "/redirect", "/huge", "/close"):
        c.result("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": receiver.url(path)})
    started = time.monotonic()
    c.result("CancelTask", {"id": task["id"]})
    for i in range(20):
        assert c.send(f"n{i}")["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert time.monotonic() - started < 1.0                  # nothing waited for a webhook
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sum(server.push_stats.values()) - \
            server.push_stats["retried"] < 5:
        time.sleep(0.05)
    stats = server.push_stats
    assert len(receiver.wait(1, "/redirect")) == 1            # not followed
    assert not [r for r in receiver.requests if r["path"] == "/ok"]
    assert stats["failed"] >= 4 and stats["delivered"] >= 1, stats    # /huge is a 200


def test_names_resolving_to_loopback_are_refused_at_delivery(receiver):
    from harness import Client
    server = a2a_min.Server(scenario_agent, push_notifications=True, push_backoff=0.01)
    c = Client(server)
    task = c.send("wait")["task"]
    url = f"http://localhost:{receiver.port}/ok"
    c.result("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url})   # a name
    c.result("CancelTask", {"id": task["id"]})
    deadline = time.monotonic() + 5
    while server.push_stats["refused"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.push_stats["refused"] == 1 and receiver.requests == []


def test_evicting_a_task_drops_its_configs():
    from harness import Client
    server = push_server(max_tasks=2)
    c = Client(server)
    task = c.send("x")["task"]
    c.result("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": "https://h.invalid/"})
    assert server.store.configs(task["id"])
    c.send("y")
    c.send("z")                                   # evicts the oldest finished task
    assert server.store.configs(task["id"]) == []


# -- authentication and scoping --------------------------------------------------------

TOKENS = {"alice-token": "alice", "bob-token": "bob"}
ALICE = {**V1, "authorization": "Bearer alice-token"}
BOB = {**V1, "authorization": "Bearer bob-token"}


def test_bearer_auth_refuses_without_credentials(make_client):
    client = make_client(a2a_min.Server(scenario_agent, authenticate=a2a_min.BearerAuth(TOKENS)))
    for headers in (V1, {**V1, "authorization": "Bearer wrong"}, {**V1, "authorization": "Basic x"}):
        error = client.error("ListTasks", {}, headers=headers)
        assert error["code"] == -31401 and "Authorization: Bearer" in error["message"]
    assert client.result("ListTasks", {}, headers=ALICE)["totalSize"] == 0


def test_401_and_www_authenticate_over_http():
    server = a2a_min.Server(scenario_agent, authenticate=a2a_min.BearerAuth(TOKENS))
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}).encode()
    resp = server.handle_http("POST", "/", "", dict(V1), body)
    assert resp.status == 401 and ("WWW-Authenticate", 'Bearer realm="a2a"') in resp.headers
    assert json.loads(resp.body)["error"]["code"] == -31401
    resp = server.handle_http("GET", "/tasks", "", dict(V1), b"")
    assert resp.status == 401 and ("WWW-Authenticate", 'Bearer realm="a2a"') in resp.headers
    assert json.loads(resp.body)["error"]["status"] == "UNAUTHENTICATED"
    card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
    assert card["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    assert card["securityRequirements"] == [{"schemes": {"bearer": {"list": []}}}]


def test_callers_never_see_each_others_tasks(make_client):
    client = make_client(a2a_min.Server(scenario_agent, push_notifications=True,
                                        authenticate=a2a_min.BearerAuth(TOKENS)))
    mine = client.result("SendMessage", {"message": user_message("wait")}, headers=ALICE)["task"]
    tid = mine["id"]
    assert client.result("GetTask", {"id": tid}, headers=ALICE)["id"] == tid
    for method, params in (("GetTask", {"id": tid}), ("CancelTask", {"id": tid}),
                           ("CreateTaskPushNotificationConfig", {"taskId": tid, "url": "https://h.invalid/"}),
                           ("ListTaskPushNotificationConfigs", {"taskId": tid}),
                           ("SendMessage", {"message": user_message("x", taskId=tid)})):
        error = client.error(method, params, headers=BOB)
        assert error["code"] == -32001, method                 # exactly like a missing task
    assert client.stream("SubscribeToTask", {"id": tid}, headers=BOB)["error"]["code"] == -32001
    assert client.result("ListTasks", {}, headers=BOB)["totalSize"] == 0
    assert client.result("ListTasks", {}, headers=ALICE)["totalSize"] == 1


def test_tenants_are_isolated(make_client):
    client = make_client(a2a_min.Server(scenario_agent))
    task = client.result("SendMessage", {"tenant": "acme", "message": user_message("x")})["task"]
    assert client.result("GetTask", {"tenant": "acme", "id": task["id"]})["id"] == task["id"]
    assert client.error("GetTask", {"tenant": "other", "id": task["id"]})["code"] == -32001
    assert client.error("GetTask", {"id": task["id"]})["code"] == -32001
    assert client.result("ListTasks", {"tenant": "other"})["totalSize"] == 0


def test_extended_card_only_with_credentials(make_client):
    server = a2a_min.Server(scenario_agent, authenticate=a2a_min.BearerAuth(TOKENS),
                            extended_card=lambda call: {"description": f"for {call.principal}"})
    client = make_client(server)
    assert client.error("GetExtendedAgentCard", {}, headers=V1)["code"] == -31401
    assert client.result("GetExtendedAgentCard", {}, headers=ALICE)["description"] == "for alice"


def test_api_key_in_header_query_and_cookie():
    for location, headers, query in (
            ("header", {**V1, "x-api-key": "k1"}, ""),
            ("query", dict(V1), "X-API-Key=k1"),
            ("cookie", {**V1, "cookie": "a=b; X-API-Key=k1"}, "")):
        server = a2a_min.Server(scenario_agent, authenticate=a2a_min.ApiKeyAuth(
            {"k1": "carol"}, location=location))
        ok = server.handle_http("GET", "/tasks", query, headers, b"")
        assert ok.status == 200, (location, ok.body)
        refused = server.handle_http("GET", "/tasks", "", dict(V1), b"")
        assert refused.status == 401
        card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
        assert card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["location"] == location


# -- fairness between callers ------------------------------------------------------------
#
# Deliveries queue per caller (CallContext.caller: here the principal) and the workers
# serve the callers in turn, one delivery in flight per destination and push_per_caller
# per caller: a caller's tarpit holds one worker, never the others' notifications.
# Alice's webhook stalls until the receiver closes (30 s).

ALICE_OWNER, BOB_OWNER = ("principal", "alice"), ("principal", "bob")


def fair_server(**options):
    return a2a_min.Server(scenario_agent, push_notifications=True, push_allow=LOOPBACK,
                          authenticate=a2a_min.BearerAuth(TOKENS), push_workers=2,
                          push_timeout=30.0, push_retries=0, **options)


def send_with_webhook(client, text, url, headers):
    return client.result("SendMessage", {"message": user_message(text), "configuration": {
        "taskPushNotificationConfig": {"url": url}}}, headers=headers)["task"]


def wait_for(condition, timeout=10):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_a_callers_tarpit_does_not_delay_another_callers_notifications():
    from harness import Client
    tarpit = Receiver(stall=30.0)
    try:
        server = fair_server()
        c = Client(server)
        for i in range(5):                     # 10 events (the task, INPUT_REQUIRED) for alice
            send_with_webhook(c, "wait", tarpit.url("/stall"), ALICE)
        assert len(tarpit.wait(1, "/stall", timeout=5)) == 1
        started = time.monotonic()
        send_with_webhook(c, "x", tarpit.url("/ok"), BOB)
        got = tarpit.wait(5, "/ok", timeout=5)  # task, WORKING, artifact, its end, COMPLETED
        assert len(got) == 5 and states(got) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
        assert time.monotonic() - started < 5
        # The tarpit still holds alice's first delivery, and only that one: one in flight
        # per caller, so the second worker was free for bob.
        assert len([r for r in tarpit.requests if r["path"] == "/stall"]) == 1
        assert wait_for(lambda: server.push_stats_by_caller()[BOB_OWNER]["sent"] == 5)
        by_caller = server.push_stats_by_caller()
        assert by_caller[ALICE_OWNER] == {"queued": 10, "sent": 0, "failed": 0, "refused": 0,
                                          "retried": 0, "dropped": 0, "paused": 0, "waiting": 9}
        assert by_caller[BOB_OWNER] == {"queued": 5, "sent": 5, "failed": 0, "refused": 0,
                                        "retried": 0, "dropped": 0, "paused": 0, "waiting": 0}
        assert server.push_stats["delivered"] == 5
    finally:
        tarpit.close()


def test_each_callers_queue_is_bounded_drops_counted_per_caller_and_logged_once(caplog):
    from harness import Client
    caplog.set_level(logging.WARNING, logger="a2a_min")
    tarpit = Receiver(stall=30.0)
    try:
        server = fair_server(push_queue=4, push_log_interval=60.0)
        c = Client(server)
        send_with_webhook(c, "wait", tarpit.url("/stall"), ALICE)    # 2 events: 1 sent, 1 waits
        assert len(tarpit.wait(1, "/stall", timeout=5)) == 1
        for i in range(4):                     # 8 more: 3 fit in the queue, 5 are dropped
            send_with_webhook(c, "wait", tarpit.url("/stall"), ALICE)
        alice = server.push_stats_by_caller()[ALICE_OWNER]
        assert (alice["queued"], alice["waiting"], alice["dropped"]) == (5, 4, 5)
        send_with_webhook(c, "wait", tarpit.url("/ok"), BOB)  # 2 events: bob's queue is his own
        assert len(tarpit.wait(2, "/ok", timeout=5)) == 2
        assert wait_for(lambda: server.push_stats_by_caller()[BOB_OWNER]["sent"] == 2)
        assert server.push_stats_by_caller()[BOB_OWNER]["dropped"] == 0
        assert server.push_stats["dropped"] == 5

        def warnings():
            return [r for r in caplog.records if "queue was full" in r.getMessage()]
        assert wait_for(lambda: warnings(), timeout=5)
        for i in range(3):                     # 6 more drops within the interval: no new line
            send_with_webhook(c, "wait", tarpit.url("/stall"), ALICE)
        time.sleep(0.3)
        assert server.push_stats_by_caller()[ALICE_OWNER]["dropped"] == 11
        lines = warnings()
        assert len(lines) == 1 and "'alice'" in lines[0].getMessage()
    finally:
        tarpit.close()


# -- one deadline per attempt ---------------------------------------------------------------

@pytest.mark.parametrize("kind", ["trickle", "tarpit", "tls-tarpit"])
def test_an_attempt_ends_at_push_timeout_however_the_receiver_trickles(kind):
    """A receiver that sends its status line a byte every 0.1 s (30 s in all), or never
    accepts (so a TLS handshake never ends either): the attempt fails after push_timeout
    (1 s) in all, not per read."""
    from harness import Client
    receiver = Receiver(trickle=0.1) if kind == "trickle" else Tarpit()
    try:
        server = push_server(push_retries=0)
        c = Client(server)
        task = c.send("wait")["task"]
        url = receiver.url("/trickle") if kind == "trickle" else receiver.url()
        if kind == "tls-tarpit":
            url = url.replace("http:", "https:")
        c.result("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url})
        started = time.monotonic()
        c.result("CancelTask", {"id": task["id"]})
        assert wait_for(lambda: server.push_stats["failed"] == 1, timeout=10)
        assert time.monotonic() - started < 6            # 1 s, with room for a loaded machine
        assert server.push_stats["delivered"] == 0
        if kind == "trickle":
            assert receiver.wait(1, "/trickle") and wait_for(lambda: receiver.trickle_cut)
    finally:
        receiver.close()


def test_the_request_line_and_headers_are_well_formed(receiver):
    from harness import Client
    server = push_server()
    c = Client(server)
    task = c.send("wait")["task"]
    c.result("CreateTaskPushNotificationConfig", {
        "taskId": task["id"], "url": receiver.url("/a b/é?q=x y"), "token": "café\tcrème",
        "authentication": {"scheme": "Basic", "credentials": "ÿ"}})
    c.result("CancelTask", {"id": task["id"]})
    got = receiver.wait(1)
    assert got[0]["path"] == "/a%20b/%C3%A9?q=x%20y"
    headers = got[0]["headers"]
    assert headers["host"] == f"127.0.0.1:{receiver.port}"
    assert headers["x-a2a-notification-token"] == "café\tcrème"     # latin-1, as sent
    assert headers["authorization"] == "Basic ÿ"
    assert headers["content-length"] == str(len(json.dumps(got[0]["body"], separators=(",", ":"),
                                                            ensure_ascii=False).encode()))


# -- header values are checked when the config is made --------------------------------

BAD_HEADER_VALUES = ["nul\x00", "a\r\nX-Evil: 1", "bell\x07", "esc\x1b[31m", "del\x7f",
                     "euro €", "emoji \U0001F600"]


def config_with(field, value):
    if field == "token":
        return {"token": value}
    key = field.split(".")[1]
    auth = {"scheme": "Bearer", "credentials": "x", key: value}
    return {"authentication": auth}


@pytest.mark.parametrize("value", BAD_HEADER_VALUES)
@pytest.mark.parametrize("field", ["token", "authentication.scheme",
                                   "authentication.credentials"])
def test_header_values_that_cannot_be_sent_are_refused_naming_the_field(field, value):
    from harness import Client
    c = Client(push_server())
    task = c.send("wait")["task"]
    config = {"url": "https://hooks.invalid/h", **config_with(field, value)}
    created = c.error("CreateTaskPushNotificationConfig", {"taskId": task["id"], **config})
    inline = c.error("SendMessage", {"message": user_message("x"), "configuration": {
        "taskPushNotificationConfig": config}})
    for error in (created, inline):
        assert error["code"] == -32602
        assert error["data"][1]["fieldViolations"][0]["field"] == field
    assert c.server.store.configs(task["id"]) == []


# -- the SSRF guard: globally routable addresses only ---------------------------------------
#
# Pure checks of literal addresses (resolve=False connects nowhere). Python 3.10's
# is_global counts several of these as global; run these tests on 3.10 as well.

NOT_ROUTABLE = [
    "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "0.0.0.0",
    "0.1.2.3", "100.64.0.1", "100.127.255.254",            # carrier-grade NAT (shared)
    "192.0.0.8", "192.0.2.1", "198.18.0.1", "198.51.100.1", "203.0.113.1", "240.0.0.1",
    "255.255.255.255", "224.0.0.1", "239.255.255.250",     # multicast
    "[::]", "[::1]", "[fe80::1]", "[fc00::1]", "[fd12:3456::1]", "[fec0::1]",  # site-local
    "[2001:db8::1]", "[3fff::1]", "[100::1]", "[ff02::1]", "[ff0e::1]", "[::7f00:1]",
    "[::ffff:127.0.0.1]", "[::ffff:10.0.0.1]", "[::ffff:100.64.0.1]",         # IPv4-mapped
    "[2002:a00:1::1]", "[2002:7f00:1::1]", "[2002:c0a8:101::1]",              # 6to4
    "[2002:6440:1::1]",                                                       # 6to4, CGNAT
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]",     # Teredo: client 127.0.0.1
    "[2001:0:a00:1:8000:63bf:3fff:fdd2]",         # Teredo: server 10.0.0.1
    "[64:ff9b::7f00:1]", "[64:ff9b::a9fe:a9fe]", "[64:ff9b:1::1]",            # NAT64
]
ROUTABLE = [
    "8.8.8.8", "1.1.1.1", "100.128.0.1", "[2606:4700:4700::1111]", "[2a00:1450:4001::200e]",
    "[::ffff:8.8.8.8]", "[2002:808:808::1]", "[64:ff9b::808:808]",
    "[2001:0:4136:e378:8000:63bf:f7f7:f7f7]",     # Teredo: 65.54.227.120 and 8.8.8.8
]


@pytest.mark.parametrize("address", NOT_ROUTABLE)
def test_the_guard_refuses_what_is_not_globally_routable(address):
    with pytest.raises(a2a_min.InvalidParamsError) as refused:
        a2a_min._webhook_target(f"https://{address}/h", a2a_min._parse_allow([]), resolve=False)
    assert refused.value.field == "url" and "push_allow" in refused.value.message


@pytest.mark.parametrize("address", ROUTABLE)
def test_the_guard_accepts_globally_routable_addresses(address):
    target = a2a_min._webhook_target(f"https://{address}:8443/h?x=1", a2a_min._parse_allow([]),
                                     resolve=False)
    assert target[0] == "https" and target[2] == 8443 and target[3] == "/h?x=1"
    assert [ipaddress.ip_address(a) for a in target[4]] == [ipaddress.ip_address(address.strip("[]"))]


@pytest.mark.parametrize("allow, address", [
    ("100.64.0.0/10", "100.64.1.2"), ("127.0.0.1/32", "[::ffff:127.0.0.1]"),
    ("10.0.0.0/8", "[2002:a00:1::1]"), ("fec0::/10", "[fec0::1]"), ("fe80::/10", "[fe80::1]")])
def test_push_allow_is_the_only_way_around_the_guard(allow, address):
    url = f"http://{address}/h"
    with pytest.raises(a2a_min.InvalidParamsError):
        a2a_min._webhook_target(url, a2a_min._parse_allow([]), resolve=False)
    assert a2a_min._webhook_target(url, a2a_min._parse_allow([allow]), resolve=False)


def test_host_names_are_checked_in_their_idna_form():
    allow = a2a_min._parse_allow(["bücher.example"])
    assert a2a_min._webhook_target("http://Bücher.example/h", allow, resolve=False) is None
    assert "xn--bcher-kva.example" in allow[0]


# -- https goes to the vetted address, the certificate checked for the name ---------------

@pytest.fixture(scope="module")
def test_ca(tmp_path_factory):
    """A throwaway CA and a certificate it signed for localhost and hooks.rebind.test:
    (client context trusting the CA, server context with the certificate)."""
    need("openssl", "the https webhook tests make a throwaway CA with the openssl command")
    d = tmp_path_factory.mktemp("ca")

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=a2a_min test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=localhost")
    (d / "leaf.ext").write_text(
        "subjectAltName=DNS:localhost,DNS:hooks.rebind.test\n"
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\nsubjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid,issuer\n")
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext")
    client = ssl.create_default_context(cafile=str(d / "ca.pem"))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(str(d / "leaf.pem"), str(d / "leaf.key"))
    return client, server


@pytest.fixture
def tls_receiver(test_ca):
    r = Receiver(tls=test_ca[1])
    yield r
    r.close()


def cancel_with_webhook(server, url):
    from harness import Client
    c = Client(server)
    task = c.send("wait")["task"]
    c.result("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": url})
    c.result("CancelTask", {"id": task["id"]})


def test_https_webhooks_are_delivered_with_the_certificate_checked_for_the_name(
        test_ca, tls_receiver):
    server = push_server(push_allow=["localhost"], push_tls_context=test_ca[0])
    cancel_with_webhook(server, tls_receiver.url(host="localhost"))
    got = tls_receiver.wait(1)
    assert states(got) == ["TASK_STATE_CANCELED"]
    assert got[0]["headers"]["host"] == f"localhost:{tls_receiver.port}"
    assert wait_for(lambda: server.push_stats["delivered"] == 1)


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_https_webhooks_fail_when_the_certificate_does_not_verify(test_ca, tls_receiver, name):
    # 127.0.0.1: the certificate is for localhost; localhost: the default context does
    # not trust the test CA. Either way no retry: a bad certificate stays bad.
    context = test_ca[0] if name == "127.0.0.1" else None
    server = push_server(push_allow=["localhost", "127.0.0.1/32"], push_tls_context=context)
    cancel_with_webhook(server, tls_receiver.url(host=name))
    assert wait_for(lambda: server.push_stats["failed"] == 1)
    assert server.push_stats["retried"] == 0 and tls_receiver.requests == []


def test_https_connects_to_the_address_that_was_checked(test_ca, tls_receiver, monkeypatch):
    """DNS rebinding: the name resolves to an allowed address once; were it resolved a
    second time (to connect, as http.client's HTTPSConnection does) it would fail."""
    answers = []
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host != "hooks.rebind.test":
            return real(host, *args, **kwargs)
        answers.append(host)
        if len(answers) > 1:
            raise socket.gaierror(socket.EAI_NONAME, "a second answer (rebinding)")
        return real("127.0.0.1", *args, **kwargs)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    server = push_server(push_tls_context=test_ca[0])       # push_allow: 127.0.0.1/32
    cancel_with_webhook(server, tls_receiver.url(host="hooks.rebind.test"))
    got = tls_receiver.wait(1)
    assert states(got) == ["TASK_STATE_CANCELED"]
    assert got[0]["headers"]["host"] == f"hooks.rebind.test:{tls_receiver.port}"
    assert answers == ["hooks.rebind.test"]
