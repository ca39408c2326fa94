"""The conformance kit's scenario agent (examples/tck_agent.py), over every binding.

The kit cannot run in CI (it is not on a package registry), so what it checks
of the scenarios, and every gap it found, is held here."""

import os
import sys

import pytest

from harness import V1, ROOT

sys.path.insert(0, os.path.join(ROOT, "examples"))
import tck_agent  # noqa: E402


def msg(message_id, text="tck", **fields):
    return {"messageId": f"{message_id}-run1", "role": "ROLE_USER", "parts": [{"text": text}],
            **fields}


@pytest.fixture
def tck(make_client):
    return make_client(tck_agent.make_server())


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
