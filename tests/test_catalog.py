"""Several agents on one server (Server.mount), each a tenant (section 3.2.5),
and the catalogs that list them (a2a_catalog.py).

The point is isolation: a task of one agent is not found through another's
tenant, the default agent or an unmounted tenant, on any operation and any
binding, whether the agents keep their tasks apart or in one store; one
agent's credentials, limits and extended card are its own.
"""

import json
import os
import subprocess
import sys
import threading

import pytest

import a2a_client
import a2a_min
from harness import HEADERS, Live, grpc_available, scenario_agent

BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
HOOK = "http://127.0.0.1:9/hook"          # (no listener: a config is made, nothing reaches it)


def beta_agent(text):
    return "beta: " + text


def front_agent(text):
    return "front: " + text


@pytest.fixture(params=["own stores", "one store", "one SQLite file"])
def site(request, tmp_path):
    """A front agent (no credentials) with two agents mounted: alpha (token
    "ta") and beta (token "tb"), both calling their caller "ann"; all on
    JSON-RPC, HTTP+JSON and (when installed) gRPC. Their tasks in their own
    stores, in one in-memory store, or in one SQLite file (three stores, as
    three processes would have)."""
    shared = a2a_min.TaskStore() if request.param == "one store" else None

    def store():
        if request.param == "one SQLite file":
            return a2a_min.open_store(str(tmp_path / "tasks.db"))
        return shared

    common = dict(push_notifications=True, push_allow=["127.0.0.1/32"])
    front = a2a_min.Server(front_agent, name="Front", store=store(), **common)
    alpha = a2a_min.Server(scenario_agent, name="Alpha", store=store(),
                           authenticate=a2a_min.BearerAuth({"ta": "ann"}),
                           extended_card={"description": "alpha, extended"},
                           max_caller_streams=1, **common)
    beta = a2a_min.Server(beta_agent, name="Beta", store=store(),
                          authenticate=a2a_min.BearerAuth({"tb": "ann"}),
                          extended_card={"description": "beta, extended"}, **common)
    front.mount("alpha", alpha)
    front.mount("beta", beta)
    grpc_server, port = None, None
    if grpc_available():
        import a2a_grpc
        grpc_server, port = a2a_grpc.create_server(front, "127.0.0.1:0")
        grpc_server.start()
    live = Live(front, timeout=5)
    live.agents = {"front": front, "alpha": alpha, "beta": beta}
    live.grpc_port = port
    yield live
    live.close()
    if grpc_server is not None:
        grpc_server.stop(0)
    front.shutdown(1)


def client(live, binding, path="", **options):
    if binding == "GRPC":
        if not grpc_available():
            pytest.skip("gRPC binding: needs the grpc extra")
        # (the card's gRPC address is another origin: credentials go there when allowed)
        options["allow_hosts"] = [f"127.0.0.1:{live.grpc_port}"]
    return a2a_client.Client(live.url + path, binding=binding, **options)


@pytest.mark.parametrize("binding", BINDINGS)
def test_each_agent_answers_its_own_tenant(site, binding):
    alpha = client(site, binding, "/alpha", auth="Bearer ta")
    beta = client(site, binding, "/beta", auth="Bearer tb")
    front = client(site, binding)
    assert alpha.tenant == "alpha" and beta.tenant == "beta" and front.tenant is None
    assert alpha.send("hi")["task"]["artifacts"][0]["parts"][0]["text"] == "echo: hi"
    assert beta.send("hi")["task"]["artifacts"][0]["parts"][0]["text"] == "beta: hi"
    assert front.send("hi")["task"]["artifacts"][0]["parts"][0]["text"] == "front: hi"
    events = list(beta.stream("streamed"))
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert alpha.extended_card()["description"] == "alpha, extended"
    assert beta.extended_card()["description"] == "beta, extended"
    assert alpha.extended_card()["name"] == "Alpha"


def probes(other):
    """Every operation on alpha's task (task id, config id) through ``other``."""
    return {
        "GetTask": lambda t, c: other.get_task(t),
        "CancelTask": lambda t, c: other.cancel_task(t),
        "SubscribeToTask": lambda t, c: list(other.subscribe(t)),
        "SendMessage": lambda t, c: other.send("continue it", task_id=t),
        "SendStreamingMessage": lambda t, c: list(other.stream("continue it", task_id=t)),
        "CreateTaskPushNotificationConfig": lambda t, c: other.create_push_config(t, HOOK),
        "GetTaskPushNotificationConfig": lambda t, c: other.get_push_config(t, c),
        "ListTaskPushNotificationConfigs": lambda t, c: other.list_push_configs(t),
        "DeleteTaskPushNotificationConfig": lambda t, c: other.delete_push_config(t, c),
    }


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_task_is_found_through_its_own_agent_alone(site, binding):
    alpha = client(site, binding, "/alpha", auth="Bearer ta")
    task = alpha.send("wait")["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    config = alpha.create_push_config(task["id"], HOOK, config_id="c1")
    others = {
        "beta, the same principal's name": client(site, binding, "/beta", auth="Bearer tb"),
        "the front agent": client(site, binding),
        "an unmounted tenant of the front": client(site, binding, tenant="gamma"),
        "the front, its tenant left empty": client(site, binding, tenant=""),
    }
    for who, other in others.items():
        for operation, probe in probes(other).items():
            with pytest.raises(a2a_min.TaskNotFoundError):
                probe(task["id"], config["id"])
                pytest.fail(f"{operation} found alpha's task through {who}")
        assert task["id"] not in [t["id"] for t in other.list_tasks().get("tasks", [])], who
    # Nothing the probes did reached it: still waiting, its config still there.
    assert alpha.get_task(task["id"])["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert [c["id"] for c in alpha.list_push_configs(task["id"])["configs"]] == ["c1"]
    assert [t["id"] for t in alpha.list_tasks()["tasks"]] == [task["id"]]


@pytest.mark.parametrize("binding", BINDINGS)
def test_credentials_are_each_agents_own(site, binding):
    for path, auth in (("/alpha", "Bearer tb"), ("/beta", "Bearer ta"), ("/alpha", None)):
        with pytest.raises(a2a_min.AuthenticationRequiredError):
            client(site, binding, path, auth=auth).list_tasks()
    # The front asks for none, and alpha's token does not open beta through a
    # tenant named by hand either.
    client(site, binding).list_tasks()
    with pytest.raises(a2a_min.AuthenticationRequiredError):
        client(site, binding, "/alpha", auth="Bearer ta", tenant="beta").list_tasks()


def test_raw_requests_name_the_tenant_in_each_bindings_way(site):
    def rpc(params, token=None):
        headers = dict(HEADERS, **({"Authorization": f"Bearer {token}"} if token else {}))
        return site.rpc("ListTasks", params, headers=headers)
    assert "error" in rpc({"tenant": "alpha"})                       # (credentials wanted)
    assert rpc({"tenant": "alpha"}, "ta")["result"]["tasks"] == []
    resp, body = site.request("GET", "/beta/tasks", headers=dict(HEADERS, Authorization="Bearer tb"))
    assert resp.status == 200 and json.loads(body)["tasks"] == []
    resp, _ = site.request("GET", "/beta/tasks", headers=HEADERS)
    assert resp.status == 401 and resp.getheader("WWW-Authenticate")
    # A tenant that is not valid JSON-RPC (a list) is refused, not a crash.
    assert rpc({"tenant": ["alpha"]})["error"]["code"] == -32602


def test_limits_are_each_agents_own(site):
    """alpha allows a caller one stream (max_caller_streams=1); beta and the
    front keep the default."""
    front = site.agents["front"]
    plain = {"a2a-version": "1.0", "content-type": "application/json"}   # (handle_http's)
    ta = dict(plain, authorization="Bearer ta")
    tb = dict(plain, authorization="Bearer tb")
    held = front.handle_http("POST", "/alpha/message:stream", "", dict(ta), json.dumps(
        {"message": {"messageId": "s1", "role": "ROLE_USER", "parts": [{"text": "slow2"}]}}
    ).encode())
    assert held.status == 200 and held.stream is not None
    second = front.handle_http("POST", "/alpha/message:stream", "", dict(ta), json.dumps(
        {"message": {"messageId": "s2", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
    ).encode())
    assert second.status == 429
    for path, headers in (("/beta/message:stream", tb), ("/message:stream", plain)):
        other = front.handle_http("POST", path, "", dict(headers), json.dumps(
            {"message": {"messageId": "s3", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
        ).encode())
        assert other.status == 200, path
        list(other.stream)
    held.stream.close()


def test_each_card_lists_the_interfaces_with_its_tenant(site):
    resp, body = site.request("GET", "/alpha/.well-known/agent-card.json")
    assert resp.status == 200 and resp.getheader("Content-Type") == "application/json"
    card = json.loads(body)
    assert card["name"] == "Alpha" and card["securitySchemes"]
    a2a_min.parse("AgentCard", card)
    front = json.loads(site.request("GET", "/.well-known/agent-card.json")[1])
    assert front["name"] == "Front" and "securitySchemes" not in front
    assert [{k: v for k, v in i.items() if k != "tenant"} for i in card["supportedInterfaces"]] \
        == front["supportedInterfaces"]
    assert {i["tenant"] for i in card["supportedInterfaces"]} == {"alpha"}
    bindings = {i["protocolBinding"] for i in card["supportedInterfaces"]}
    assert bindings == ({"JSONRPC", "HTTP+JSON", "GRPC"} if grpc_available() else
                        {"JSONRPC", "HTTP+JSON"})
    assert site.request("GET", "/gamma/.well-known/agent-card.json")[0].status == 404
    assert site.request("POST", "/alpha/.well-known/agent-card.json", b"{}",
                        HEADERS)[0].status == 405


def test_the_ai_catalog_lists_every_agent(site):
    resp, body = site.request("GET", "/.well-known/ai-catalog.json")
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "application/ai-catalog+json"
    assert resp.getheader("Access-Control-Allow-Origin") == "*"
    catalog = json.loads(body)
    assert catalog["specVersion"] == "1.0" and catalog["host"] == {"displayName": "127.0.0.1"}
    assert [(e["identifier"], e["displayName"]) for e in catalog["entries"]] == [
        ("urn:air:127.0.0.1:a2a:default", "Front"),
        ("urn:air:127.0.0.1:a2a:tenant:alpha", "Alpha"),
        ("urn:air:127.0.0.1:a2a:tenant:beta", "Beta")]
    for entry in catalog["entries"]:               # each card is where the entry says
        assert entry["type"] == "application/a2a-agent-card+json"
        card = a2a_client.fetch_card(entry["url"])[0]
        assert card["name"] == entry["displayName"]


def test_the_api_catalog_lists_every_agent(site):
    resp, body = site.request("GET", "/.well-known/api-catalog")
    assert resp.status == 200 and "rfc9727" in resp.getheader("Content-Type")
    linkset = json.loads(body)["linkset"]
    items = [item["href"] for item in linkset[0]["item"]]
    assert f"{site.url}/alpha" in items and f"{site.url}/beta" in items
    described = {entry["anchor"]: entry["service-desc"][0]["href"] for entry in linkset[1:]}
    assert described[f"{site.url}/alpha"] == f"{site.url}/alpha/.well-known/agent-card.json"
    assert described[f"{site.url}/"] == f"{site.url}/.well-known/agent-card.json"


def test_the_ai_catalog_reads_in_an_independent_parser():
    """The ARD SDK (ard-sdk, from PyPI; Python 3.12+) parses and validates the
    catalog: no entry dropped, nothing worse than a warning."""
    probe = ("import sys, json\n"
             "from ard.catalog.manifest import Manifest\n"
             "from ard.validation.core import validate, Profile\n"
             "manifest, errors = Manifest.parse_lenient(sys.stdin.buffer.read())\n"
             "print(json.dumps({'errors': [str(e) for e in errors],\n"
             "  'entries': [[str(e.identifier), str(e.type), e.url] for e in manifest.entries],\n"
             "  'issues': [[str(i.severity), i.code] for p in Profile\n"
             "             for i in validate(manifest, p).issues]}))\n")
    found = subprocess.run([sys.executable, "-c", "import ard.catalog.manifest"],
                           capture_output=True)
    if found.returncode:
        if sys.version_info >= (3, 12) and os.environ.get("A2A_REQUIRE_ALL") == "1":
            pytest.fail("ard-sdk (the test extra) is not installed")
        pytest.skip("needs ard-sdk (the test extra, Python 3.12+)")
    front = a2a_min.Server(front_agent, name="Front", public_url="https://agents.example.org")
    front.mount("travel", a2a_min.Server(beta_agent, name="Travel"))
    body = front.handle_http("GET", "/.well-known/ai-catalog.json", "", {}, b"").body
    seen = json.loads(subprocess.run([sys.executable, "-c", probe], input=body,
                                     capture_output=True, check=True).stdout)
    assert seen["errors"] == []
    assert seen["entries"] == [
        ["urn:air:agents.example.org:a2a:default", "application/a2a-agent-card+json",
         "https://agents.example.org/.well-known/agent-card.json"],
        ["urn:air:agents.example.org:a2a:tenant:travel", "application/a2a-agent-card+json",
         "https://agents.example.org/travel/.well-known/agent-card.json"]]
    assert all(severity.lower() in ("warning", "info", "severity.warning", "severity.info")
               for severity, _ in seen["issues"]), seen["issues"]


def test_mount_refuses_what_it_cannot_route():
    front = a2a_min.Server(front_agent)
    alpha = a2a_min.Server(scenario_agent)
    v03 = a2a_min.Server(scenario_agent, compat="0.3")
    for tenant, server in (("", alpha), ("Al/pha", alpha), ("a b", alpha), ("x", front),
                           ("old", v03)):
        with pytest.raises(ValueError, match="mount"):
            front.mount(tenant, server)
    front.mount("alpha", alpha)
    for tenant, server in (("alpha", a2a_min.Server(scenario_agent)), ("again", alpha)):
        with pytest.raises(ValueError, match="mount"):
            front.mount(tenant, server)


def test_shutdown_waits_for_the_mounted_agents_turns():
    front = a2a_min.Server(front_agent)
    alpha = a2a_min.Server(scenario_agent)
    front.mount("alpha", alpha)
    front.call("SendMessage", {"tenant": "alpha", "configuration": {"returnImmediately": True},
                               "message": {"messageId": "m", "role": "ROLE_USER",
                                           "parts": [{"text": "slow0.3"}]}})
    assert alpha.live.running() == 1
    front.shutdown(5)
    assert alpha.closing.is_set() and alpha.live.running() == 0
    task = front.call("ListTasks", {"tenant": "alpha"})["tasks"][0]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_serve_agent_flags_and_check_of_the_catalog():
    """python a2a_min.py --agent NAME=MODULE:ATTR ... serves them; check CATALOG
    checks each agent it lists (billing refuses travel's token: its FAILs)."""
    from harness import ROOT, free_port, run_host
    port = free_port()
    proc = run_host([sys.executable, "a2a_min.py", "--port", str(port), "--stats-interval", "0",
                     "--agent", "travel=examples.several_agents:travel",
                     "--agent", "billing=examples.several_agents:billing"], port)
    try:
        done = subprocess.run(
            [sys.executable, "a2a_min.py", "check",
             f"http://127.0.0.1:{port}/.well-known/ai-catalog.json", "--auth", "Bearer traveler"],
            cwd=ROOT, capture_output=True, text=True, timeout=120)
    finally:
        proc.terminate()
        proc.wait(10)
    assert done.returncode == 1, done.stderr
    report = done.stdout.split("\n== ")
    assert report[0].startswith("PASS  AI catalog  3 entries, 3 A2A agent cards")
    default, travel, billing = report[1:]
    assert default.startswith("urn:air:127.0.0.1:a2a:default: ") and "\nno failures" in default
    assert travel.startswith("urn:air:127.0.0.1:a2a:tenant:travel: ")
    assert "\nno failures" in travel and "\nFAIL " not in travel
    assert "invalid credentials" in billing and billing.rstrip().endswith("3 agents: 5 failed")


@pytest.mark.parametrize("spec, says", [
    ("travel", "write NAME=MODULE:ATTR"),
    ("travel=no_such_module_here:x", "No module named 'no_such_module_here'"),
    ("travel=examples.several_agents:nothing", "has no attribute 'nothing'"),
    ("travel=json:__doc__", "is not an a2a_min.Server, nor a function returning one"),
    ("travel=json:dumps", "json.dumps() failed: TypeError("),
    ("Travel=examples.several_agents:travel", "mount('Travel')"),
])
def test_serve_agent_flag_errors_say_what_to_write(spec, says):
    from harness import ROOT
    done = subprocess.run([sys.executable, "a2a_min.py", "--port", "0", "--agent", spec],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and says in done.stderr, done.stderr
