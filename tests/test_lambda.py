"""The AWS Lambda handler, driven with recorded event shapes of the three
sources: API Gateway REST (payload 1.0), HTTP API and function URLs (2.0)."""

import base64
import copy
import json
import os

import pytest

import a2a_min
from harness import ROOT, parse_sse, scenario_agent, user_message

EVENTS = os.path.join(ROOT, "tests", "lambda_events")


def load(name):
    with open(os.path.join(EVENTS, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def request(event, method, path, body=None, query=""):
    event = copy.deepcopy(event)
    data = json.dumps(body).encode() if body is not None else b""
    if event.get("version") == "2.0":
        event["requestContext"]["http"]["method"] = method
        event["rawPath"], event["rawQueryString"] = path, query
    else:
        event["httpMethod"], event["path"] = method, path
        if query:
            event["queryStringParameters"] = dict(p.split("=") for p in query.split("&"))
    if event.get("isBase64Encoded"):
        event["body"] = base64.b64encode(data).decode()
    else:
        event["body"] = data.decode() or None
    return event


class Context:
    def __init__(self, remaining_ms=30_000):
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self):
        return self.remaining_ms


@pytest.mark.parametrize("source", ["rest_v1", "http_v2", "function_url"])
def test_every_event_source(source):
    handler = a2a_min.lambda_handler(a2a_min.Server(scenario_agent))
    event = load(source)
    answer = handler(request(event, "GET", "/.well-known/agent-card.json"), Context())
    assert answer["statusCode"] == 200 and not answer["isBase64Encoded"]
    card = json.loads(answer["body"])
    host = (event.get("headers") or {}).get("Host") or event["headers"]["host"]
    stage = "/prod" if source == "rest_v1" else ""
    assert card["supportedInterfaces"][0]["url"] == f"https://{host}{stage}/"
    # The card says streams come whole here (and still that it streams).
    assert card["capabilities"]["streaming"] is True
    assert a2a_min.BUFFERED_STREAMS in [e["uri"] for e in card["capabilities"]["extensions"]]
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
           "params": {"message": user_message("hi")}}
    answer = handler(request(event, "POST", "/", rpc), Context())
    task = json.loads(answer["body"])["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    answer = handler(request(event, "GET", f"/tasks/{task['id']}", query="historyLength=0"),
                     Context())
    got = json.loads(answer["body"])
    assert got["id"] == task["id"] and "history" not in got       # warm: same store


def test_streams_are_buffered_into_one_body():
    handler = a2a_min.lambda_handler(a2a_min.Server(scenario_agent))
    answer = handler(request(load("http_v2"), "POST", "/message:stream",
                             {"message": user_message("chunks")}), Context())
    assert answer["headers"]["Content-Type"] == "text/event-stream"
    events = parse_sse(answer["body"].encode())
    assert "task" in events[0][1]
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_stream_is_cut_when_time_runs_low():
    handler = a2a_min.lambda_handler(a2a_min.Server(scenario_agent, keepalive_interval=0.05),
                                     margin=1.0)
    answer = handler(request(load("http_v2"), "POST", "/message:stream",
                             {"message": user_message("slow5")}), Context(remaining_ms=500))
    events = parse_sse(answer["body"].encode())
    assert "task" in events[0][1] and len(events) <= 2             # returned early, not after 5 s


def test_errors_keep_their_http_status():
    handler = a2a_min.lambda_handler(a2a_min.Server(scenario_agent))
    event = request(load("rest_v1"), "GET", "/tasks/missing")
    answer = handler(event, Context())
    assert answer["statusCode"] == 404
    assert json.loads(answer["body"])["error"]["status"] == "NOT_FOUND"
