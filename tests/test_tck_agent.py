"""The conformance suites' scenario agent (examples/tck_agent.py), over every
binding: the older kit's scenarios (by messageId), ACTS's behaviors (by the
first text part) and ACTS's three runs.

Neither suite can run in CI (neither is on a package registry), so what they
check of the scenarios, and every gap they found, is held here."""

import json
import os
import sys
import time

import pytest

from harness import V1, ROOT, Live

sys.path.insert(0, os.path.join(ROOT, "examples"))
import tck_agent  # noqa: E402


def msg(message_id, text="tck", **fields):
    return {"messageId": f"{message_id}-run1", "role": "ROLE_USER", "parts": [{"text": text}],
            **fields}


@pytest.fixture
def tck(make_client):
    return make_client(tck_agent.make_server("tck"))


def final(task):
    return task["status"]["state"]


def test_scenarios_on_send_message(tck):
    done = tck.result("SendMessage", {"message": msg("tck-complete-task")})["task"]
    assert final(done) == "TASK_STATE_COMPLETED"
    assert done["status"]["message"]["parts"] == [{"text": "Hello from TCK"}]
    assert final(tck.result("SendMessage", {"message": msg("tck-input-required")})["task"]) == \
        "TASK_STATE_INPUT_REQUIRED"
    text = tck.result("SendMessage", {"message": msg("tck-artifact-text")})["task"]
    assert text["artifacts"][0]["parts"] == [{"text": "Generated text content"}]
    file = tck.result("SendMessage", {"message": msg("tck-artifact-file")})["task"]
    part = file["artifacts"][0]["parts"][0]
    assert "raw" in part and part["filename"] == "output.txt" and part["mediaType"] == "text/plain"
    url = tck.result("SendMessage", {"message": msg("tck-artifact-file-url")})["task"]
    assert url["artifacts"][0]["parts"][0]["url"] == "https://example.com/output.txt"
    data = tck.result("SendMessage", {"message": msg("tck-artifact-data")})["task"]
    assert data["artifacts"][0]["parts"][0]["data"] == {"key": "value", "count": 42}
    direct = tck.result("SendMessage", {"message": msg("tck-message-response")})
    assert direct["message"]["parts"] == [{"text": "Direct message response"}]
    assert tck.error("SendMessage", {"message": msg("tck-reject-task")})["message"] == "rejected"
    other = tck.result("SendMessage", {"message": msg("anything-else")})["task"]
    assert final(other) == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("prefix, text", [
    ("tck-stream-001", "Stream hello from TCK"), ("tck-stream-003", "Stream task lifecycle"),
    ("tck-stream-ordering-001", "Ordered output"), ("tck-stream-artifact-text", "Streamed text content")])
def test_streamed_scenarios(tck, prefix, text):
    events = [e for _, e in tck.stream("SendStreamingMessage", {"message": msg(prefix)})]
    out = [e["result"] for e in events]
    assert "task" in out[0]
    assert out[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    assert out[2]["artifactUpdate"]["artifact"]["parts"] == [{"text": text}]
    assert out[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_chunked_stream(tck):
    out = [e["result"] for _, e in tck.stream("SendStreamingMessage",
                                               {"message": msg("tck-stream-artifact-chunked")})]
    chunks = [o["artifactUpdate"] for o in out if "artifactUpdate" in o]
    assert [c["artifact"]["parts"][0]["text"] for c in chunks] == ["chunk-1 ", "chunk-2"]
    assert chunks[1].get("lastChunk") is True and all(c.get("append") for c in chunks)


def test_required_extension_asked_for_by_the_agent(tck):
    """CORE-CAP-004: a message that needs the required extension without announcing it
    fails with ExtensionSupportRequiredError; announcing it, or other messages, succeed."""
    card = tck.server.agent_card()
    assert {"uri": tck_agent.REQUIRED_EXTENSION, "required": True,
            "description": "Required by the conformance kit's extension tests."} in \
        card["capabilities"]["extensions"]
    error = tck.error("SendMessage", {"message": msg("tck-cap-ext-004-jsonrpc")})
    assert error["code"] == -32008 and tck_agent.REQUIRED_EXTENSION in error["message"]
    announced = {**V1, "a2a-extensions": tck_agent.REQUIRED_EXTENSION}
    assert final(tck.result("SendMessage", {"message": msg("tck-cap-ext-004-jsonrpc")},
                            headers=announced)["task"]) == "TASK_STATE_COMPLETED"


def test_capabilities_all_on(tck):
    caps = tck.server.agent_card()["capabilities"]
    assert caps["streaming"] and caps["pushNotifications"] and caps["extendedAgentCard"]
    assert tck.result("GetExtendedAgentCard", {})["description"].startswith("The extended card")


# -- ACTS (the specification's suite): the first text part steers -------------------

VALID, OTHER, INSUFFICIENT = ({**V1, "authorization": f"Bearer acts-{who}-token"}
                              for who in ("valid", "other", "insufficient"))


def said(text, configuration=None, **fields):
    params = {"message": {"messageId": "m-" + text.replace(" ", "-"), "role": "ROLE_USER",
                          "parts": [{"text": text}], **fields}}
    return {**params, "configuration": configuration} if configuration else params


@pytest.fixture(params=["full", "auth"])
def acts(request, make_client):
    """The agent of ACTS's runs with every capability: anonymous callers, or tokens."""
    client = make_client(tck_agent.make_server(request.param))
    client.headers = VALID if request.param == "auth" else V1
    return client


def test_each_behavior_ends_as_acts_says(acts):
    ends = {"tck-complete-task": "TASK_STATE_COMPLETED",
            "tck-input-required": "TASK_STATE_INPUT_REQUIRED",
            "tck-reject-task": "TASK_STATE_REJECTED",          # a task, not an error
            "tck-task-failure": "TASK_STATE_FAILED",
            "tck-auth-required": "TASK_STATE_AUTH_REQUIRED",
            "tck-multi-turn": "TASK_STATE_INPUT_REQUIRED"}
    for prefix, state in ends.items():
        task = acts.result("SendMessage", said(prefix + " please"), headers=acts.headers)["task"]
        assert final(task) == state, prefix
        assert task["status"].get("message", {}).get("parts") or state == "TASK_STATE_COMPLETED"
    direct = acts.result("SendMessage", said("tck-message-response hi"), headers=acts.headers)
    assert direct["message"]["role"] == "ROLE_AGENT"
    for prefix, key in (("tck-artifact-text", "text"), ("tck-artifact-file", "raw"),
                        ("tck-artifact-file-url", "url"), ("tck-artifact-data", "data")):
        task = acts.result("SendMessage", said(prefix), headers=acts.headers)["task"]
        assert key in task["artifacts"][0]["parts"][0] and final(task) == "TASK_STATE_COMPLETED"


def test_multi_turn_until_done_and_cancel(acts):
    first = acts.result("SendMessage", said("tck-multi-turn start"), headers=acts.headers)["task"]
    again = acts.result("SendMessage", said("more", taskId=first["id"]),
                        headers=acts.headers)["task"]
    assert final(again) == "TASK_STATE_INPUT_REQUIRED"
    done = acts.result("SendMessage", said("done", taskId=first["id"]), headers=acts.headers)
    assert final(done["task"]) == "TASK_STATE_COMPLETED"
    waiting = acts.result("SendMessage", said("tck-cancel now", configuration={
        "returnImmediately": True}), headers=acts.headers)["task"]
    assert final(acts.result("CancelTask", {"id": waiting["id"]}, headers=acts.headers)) == \
        "TASK_STATE_CANCELED"


def test_long_running_works_then_leaves_an_artifact(acts, monkeypatch):
    monkeypatch.setattr(tck_agent, "LONG_RUNNING_SECONDS", 0.2)
    task = acts.result("SendMessage", said("tck-long-running go", configuration={
        "returnImmediately": True}), headers=acts.headers)["task"]
    assert final(task) in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    for _ in range(100):
        got = acts.result("GetTask", {"id": task["id"]}, headers=acts.headers)
        if final(got) == "TASK_STATE_COMPLETED":
            break
        time.sleep(0.05)
    assert final(got) == "TASK_STATE_COMPLETED" and got["artifacts"]


def test_streams_basic_and_chunked(acts):
    basic = [e["result"] for _, e in acts.stream("SendStreamingMessage",
                                                  said("tck-stream-basic"), headers=acts.headers)]
    assert "task" in basic[0] and basic[-1]["statusUpdate"]["status"]["state"] == \
        "TASK_STATE_COMPLETED"
    assert any("artifactUpdate" in e for e in basic)
    chunked = [e["result"]["artifactUpdate"] for _, e in acts.stream(
        "SendStreamingMessage", said("tck-stream-chunked"), headers=acts.headers)
        if "artifactUpdate" in e["result"]]
    assert len(chunked) == 3 and chunked[-1]["lastChunk"] is True
    assert [c.get("append", False) for c in chunked] == [False, True, True]


def test_a_part_of_a_type_the_card_lacks_is_refused(acts):
    """CORE-SEND-004, as the corpus writes it (the type in metadata: a data part is
    application/json, which this agent does not take) and with the part's mediaType."""
    for part in ({"data": {"value": "unsupported"},
                  "metadata": {"contentType": "application/x-unsupported-type-12345"}},
                 {"raw": "eA==", "mediaType": "application/x-unsupported-type-12345"}):
        error = acts.error("SendMessage", {"message": {**said("x")["message"], "parts": [part]}},
                           headers=acts.headers)
        assert error["code"] == -32005, error


def test_the_full_run_serves_anonymous_callers_but_not_the_extended_card(make_client):
    """SEC-EXTCARD-001/004: the extended card needs credentials (section 13.3); the
    card lists the scheme and requires it of nobody."""
    full = make_client(tck_agent.make_server("full"))
    card = full.server.agent_card()
    assert card["securitySchemes"] and "securityRequirements" not in card
    assert final(full.result("SendMessage", said("tck-complete-task"))["task"]) == \
        "TASK_STATE_COMPLETED"
    assert full.error("GetExtendedAgentCard", {})["code"] == -31401
    assert full.result("GetExtendedAgentCard", {}, headers=VALID)["description"]


def test_the_auth_run_answers_401_403_and_200(make_client):
    """SEC-AUTH-001/002/004 and SEC-EXTCARD-002: no token, a token that may not, a token that may."""
    auth = make_client(tck_agent.make_server("auth"))
    assert auth.server.agent_card()["securityRequirements"]
    for method, params in (("SendMessage", said("tck-complete-task")), ("GetTask", {"id": "x"}),
                           ("ListTasks", {}), ("GetExtendedAgentCard", {})):
        assert auth.error(method, params)["code"] == -31401, method
        denied = auth.error(method, params, headers=INSUFFICIENT)
        reason = next(d["reason"] for d in denied["data"] if "reason" in d)
        assert reason == "PERMISSION_DENIED" and "acts-valid-token" in denied["message"], method
        assert denied.get("grpcStatus", "PERMISSION_DENIED") == "PERMISSION_DENIED"
    assert auth.result("GetExtendedAgentCard", {}, headers=VALID)["description"]


def test_another_users_task_is_reported_as_missing(make_client):
    """SEC-AUTH-003: the same error for another user's task as for no task."""
    auth = make_client(tck_agent.make_server("auth"))
    theirs = auth.result("SendMessage", said("tck-complete-task"), headers=OTHER)["task"]
    mine = auth.error("GetTask", {"id": theirs["id"]}, headers=VALID)
    missing = auth.error("GetTask", {"id": "00000000-0000-0000-0000-000000000000"},
                         headers=VALID)
    assert mine["code"] == missing["code"] == -32001


def test_the_bare_run_has_no_streaming_push_or_extended_card(make_client):
    bare = make_client(tck_agent.make_server("bare"))
    caps = bare.server.agent_card()["capabilities"]
    assert not (caps["streaming"] or caps["pushNotifications"] or caps["extendedAgentCard"])
    assert bare.error("GetExtendedAgentCard", {})["code"] == -32004          # SEC-EXTCARD-003
    assert bare.error("ListTaskPushNotificationConfigs", {"taskId": "t"})["code"] == -32003


def test_the_behaviors_file_lists_every_prefix():
    listed = [b["prefix"] for b in tck_agent.behaviors_document()["behaviors"]]
    assert listed == list(tck_agent.BEHAVIORS) and "tck-cancel" in listed


@pytest.mark.parametrize("run, token, status", [
    ("full", None, 401), ("full", "insufficient", 403), ("full", "valid", 200),
    ("auth", None, 401), ("auth", "insufficient", 403), ("auth", "valid", 200)])
def test_the_extended_card_over_http_says_401_403_200(run, token, status):
    """SEC-EXTCARD-001/002 as the suite sends them: GET /extendedAgentCard, raw."""
    live = Live(tck_agent.make_server(run))
    try:
        connection = live.connection()
        headers = {"A2A-Version": "1.0", "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer acts-{token}-token"
        connection.request("GET", "/extendedAgentCard", headers=headers)
        response = connection.getresponse()
        body = json.loads(response.read())
        assert response.status == status, body
        assert ("error" in body) == (status != 200)
        if status == 401:
            assert response.getheader("WWW-Authenticate", "").startswith("Bearer")
    finally:
        live.close()
