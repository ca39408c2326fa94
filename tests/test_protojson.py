"""The hand-written ProtoJSON: parse() rules, and agreement with protobuf's encoder."""

import base64
import json
import subprocess
import sys

import pytest

import a2a_min
from a2a_min import InvalidParamsError, parse
from harness import require_sdk, ROOT, V1, Client, scenario_agent, user_message


def test_snake_case_accepted_camel_case_out():
    got = parse("Message", {"message_id": "m", "role": "ROLE_USER", "context_id": "c",
                            "parts": [{"text": "x", "media_type": "text/plain"}]})
    assert got == {"messageId": "m", "role": "ROLE_USER", "contextId": "c",
                   "parts": [{"text": "x", "mediaType": "text/plain"}]}


def test_enum_integers_become_names():
    assert parse("Message", {"messageId": "m", "role": 1, "parts": [{"text": "x"}]})["role"] == "ROLE_USER"
    assert parse("TaskStatus", {"state": 3})["state"] == "TASK_STATE_COMPLETED"
    with pytest.raises(InvalidParamsError):
        parse("TaskStatus", {"state": 42})


def test_bytes_accept_url_safe_and_unpadded_base64():
    data = bytes(range(250, 256)) + b"?>"
    url_safe = base64.urlsafe_b64encode(data).decode().rstrip("=")
    got = parse("Part", {"raw": url_safe})
    assert got == {"raw": base64.b64encode(data).decode()}
    assert base64.b64decode(got["raw"]) == data


def test_timestamps_are_normalized_to_utc_milliseconds():
    got = parse("TaskStatus", {"state": "TASK_STATE_WORKING",
                               "timestamp": "2025-10-28T12:30:00.1234+02:00"})
    assert got["timestamp"] == "2025-10-28T10:30:00.124Z"          # rounded up: >= stays exact
    for bad in ("2025-13-01T00:00:00Z", "2025-10-28 10:30:00", "yesterday", 5):
        with pytest.raises(InvalidParamsError):
            parse("TaskStatus", {"state": "TASK_STATE_WORKING", "timestamp": bad})


def test_defaults_are_dropped_optionals_kept():
    got = parse("ListTasksRequest", {"contextId": "", "pageSize": 0, "includeArtifacts": False,
                                     "historyLength": 0, "status": "TASK_STATE_UNSPECIFIED"})
    assert got == {"pageSize": 0, "includeArtifacts": False, "historyLength": 0,
                   "status": "TASK_STATE_UNSPECIFIED"}


def test_unknown_fields_ignored_null_means_unset():
    got = parse("Part", {"text": "x", "kind": "text", "metadata": None, "futureField": {"a": 1}})
    assert got == {"text": "x"}


def test_int32_accepts_numeric_strings_and_rejects_overflow():
    assert parse("GetTaskRequest", {"id": "t", "historyLength": "3"})["historyLength"] == 3
    for bad in (2**31, True, "3.5", [3]):
        with pytest.raises(InvalidParamsError):
            parse("GetTaskRequest", {"id": "t", "historyLength": bad})


def test_part_needs_exactly_one_content():
    with pytest.raises(InvalidParamsError, match="exactly one of text, raw, url, data"):
        parse("Part", {"filename": "a.txt"})
    with pytest.raises(InvalidParamsError, match="only one"):
        parse("Part", {"text": "a", "data": 1})
    assert parse("Part", {"data": None, "text": "a"}) == {"text": "a"}
    assert parse("Part", {"data": 0}) == {"data": 0}           # a oneof member keeps its zero


def test_error_names_the_field_path():
    with pytest.raises(InvalidParamsError) as info:
        parse("SendMessageRequest", {"message": {"messageId": "m", "role": "ROLE_USER",
                                                 "parts": [{"text": "ok"}, {"text": 5}]}})
    assert info.value.field == "message.parts[1].text"
    assert info.value.details()[1]["fieldViolations"][0]["field"] == "message.parts[1].text"


def test_messages_table_has_unique_numbers_and_names():
    for name, rows in a2a_min.MESSAGES.items():
        numbers = [r[0] for r in rows]
        names = [r[1] for r in rows]
        assert len(set(numbers)) == len(numbers), name
        assert len(set(names)) == len(names), name


# -- agreement with protobuf's own ProtoJSON encoder ----------------------------------

def sample_documents():
    """What this server really emits: tasks, events, pages and the card."""
    def agent(ctx):
        yield a2a_min.status_update("TASK_STATE_WORKING", "thinking")
        yield a2a_min.artifact_update([a2a_min.text_part("t"),
                                       a2a_min.file_part(raw=b"\x00\xffdata", filename="f.bin",
                                                         media_type="application/octet-stream"),
                                       a2a_min.file_part(url="https://example.com/x.png"),
                                       a2a_min.data_part({"k": [1, 2.5, None, True]})],
                                      name="everything", metadata={"m": "v"})
        yield "chunk one "
        yield "chunk two"

    client = Client(a2a_min.Server(agent, extended_card={"description": "more"},
                                   authenticate=a2a_min.BearerAuth({"t": "u"}, anonymous=True)))
    docs = []
    task = client.send("x", metadata={"req": 1})["task"]
    docs.append(("Task", task))
    stream = client.stream("SendStreamingMessage", {"message": user_message("y")})
    docs += [("StreamResponse", payload["result"]) for _, payload in stream]
    docs.append(("ListTasksResponse", client.result("ListTasks", {"includeArtifacts": True})))
    docs.append(("ListTasksResponse", client.result("ListTasks", {"contextId": "none"})))
    docs.append(("AgentCard", client.result("GetExtendedAgentCard",
                                            headers={**V1, "authorization": "Bearer t"})))
    docs.append(("AgentCard", json.loads(client.server.handle_http(
        "GET", "/.well-known/agent-card.json").body)))
    direct = Client(a2a_min.Server(scenario_agent)).send("direct")
    docs.append(("SendMessageResponse", direct))
    docs.append(("SendMessageResponse", {"task": task}))
    return docs


def test_documents_match_protobufs_json_format():
    require_sdk()
    docs = sample_documents()
    proc = subprocess.run([sys.executable, f"{ROOT}/tests/protojson_roundtrip.py"],
                          input=json.dumps(docs), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for (name, ours), theirs in zip(docs, json.loads(proc.stdout)):
        if name == "ListTasksResponse":
            # Required by the spec even when empty (section 3.1.4); protobuf drops defaults.
            theirs.setdefault("tasks", [])
            theirs.setdefault("nextPageToken", "")
            theirs.setdefault("totalSize", 0)
        # protobuf writes a whole second without its fraction ("...:47Z"), we
        # always with milliseconds ("...:47.000Z"): the same instant (section 5.5).
        ours = json.loads(json.dumps(ours).replace('.000Z"', 'Z"'))
        assert ours == theirs, name


# -- the JSON codec: json's C encoder and scanner, called directly -------------

DOCUMENTS = [{}, [], "", {"a": [1, 2.5, True, None, "é ☃ \n \"q\" \\ \u0000"], "b": {"c": []}},
             {"task": {"id": "x", "artifacts": [{"parts": [{"text": "t" * 5000}]}]}},
             [{}] * 1000, 0, -1, 10 ** 30, "\U0001f600"]


@pytest.mark.parametrize("accelerated", [True, False])
def test_the_json_codec_gives_what_json_gives_with_or_without_the_c_accelerator(
        accelerated, monkeypatch):
    import json.encoder
    import json.scanner
    if not accelerated:                  # (as on PyPy: no C encoder, no C scanner)
        monkeypatch.setattr(json.encoder, "c_make_encoder", None)
        monkeypatch.setattr(json.scanner, "c_make_scanner", None)
    encode, decode_stored = a2a_min._json_codec()
    for document in DOCUMENTS:
        text = encode(document)
        assert text == json.dumps(document, ensure_ascii=False, separators=(",", ":"))
        assert decode_stored(text.encode()) == document
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode({"a": object()})
    circular = []
    circular.append(circular)
    with pytest.raises((ValueError, RecursionError)):
        encode(circular)


def test_dumps_escapes_a_lone_surrogate_that_utf_8_cannot_carry():
    assert json.loads(a2a_min._dumps({"id": "\ud800x"})) == {"id": "\ud800x"}
