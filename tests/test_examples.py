"""The examples run as their docstrings say."""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from harness import ROOT, V1, Client, user_message

sys.path.insert(0, os.path.join(ROOT, "examples"))


def test_bearer_agent():
    import bearer_agent
    client = Client(bearer_agent.make_server())
    assert client.error("ListTasks", {}, headers=V1)["code"] == -31401
    alice = {**V1, "authorization": "Bearer alice-secret"}
    task = client.result("SendMessage", {"message": user_message("hi")}, headers=alice)["task"]
    assert task["artifacts"][0]["parts"][0]["text"] == "Hello alice, you said: hi"
    bob = {**V1, "authorization": "Bearer bob-secret"}
    assert client.error("GetTask", {"id": task["id"]}, headers=bob)["code"] == -32001
    assert client.result("GetExtendedAgentCard", {}, headers=bob)["description"] == "Echoes, for bob."


def test_webhook_receiver_prints_deliveries():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "examples/webhook_receiver.py", str(port)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert "webhook receiver" in proc.stdout.readline()
        import a2a_min
        server = a2a_min.Server(lambda t: "pushed " + t, push_notifications=True,
                                push_allow=["127.0.0.1/32"])
        Client(server).result("SendMessage", {"message": user_message("x"), "configuration": {
            "taskPushNotificationConfig": {"url": f"http://127.0.0.1:{port}/hook", "token": "t1"}}})
        lines = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("TASK_STATE_COMPLETED" in l for l in lines):
            lines.append(proc.stdout.readline())
        text = "".join(lines)
        assert "--- POST /hook" in text and "X-A2A-Notification-Token: t1" in text
        assert "\ntraceparent: 00-" in text                # (the turn's trace)
        assert "pushed x" in text and "TASK_STATE_COMPLETED" in text
    finally:
        proc.terminate()
        proc.wait(10)


def test_traced_agents_print_one_trace():
    from harness import need
    need("opentelemetry.sdk", "OpenTelemetry's SDK: pip install -e '.[test]'")   # (not imported)
    done = subprocess.run([sys.executable, "examples/traced_agents.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    decoder, spans, at = json.JSONDecoder(), [], 0
    while done.stdout[at:].strip():
        at += len(done.stdout[at:]) - len(done.stdout[at:].lstrip())
        span, at = decoder.raw_decode(done.stdout, at)
        spans.append(span)
    calls = [s for s in spans if s["name"] != "GET /.well-known/agent-card.json"]
    assert sorted((s["name"], s["kind"]) for s in calls) == sorted(
        [("lf.a2a.v1.A2AService/SendMessage", "SpanKind.CLIENT")] * 2
        + [("lf.a2a.v1.A2AService/SendMessage", "SpanKind.SERVER")] * 2
        + [("a2a.turn", "SpanKind.INTERNAL")] * 2)
    assert len({s["context"]["trace_id"] for s in calls}) == 1
    assert "Writer says: A haiku about autumn" in done.stderr


def test_several_agents():
    import several_agents
    front = several_agents.make_server()
    client = Client(front)
    travel = {**V1, "authorization": "Bearer traveler"}
    task = client.result("SendMessage", {"tenant": "travel", "message": user_message("Oslo")},
                         headers=travel)["task"]
    assert task["artifacts"][0]["parts"][0]["text"].startswith("Trains to Oslo")
    assert client.error("GetTask", {"tenant": "billing", "id": task["id"]},
                        headers={**V1, "authorization": "Bearer accountant"})["code"] == -32001
    assert client.error("GetTask", {"id": task["id"]}, headers=V1)["code"] == -32001
    card = json.loads(front.handle_http("GET", "/billing/.well-known/agent-card.json").body)
    assert card["name"] == "Billing" and card["supportedInterfaces"][0]["tenant"] == "billing"
