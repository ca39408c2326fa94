"""The HTTP+JSON binding (section 11): routes, query parameters, media types,
google.rpc.Status errors, and the bad input it must survive."""

import json
import subprocess
import sys

import pytest

import a2a_min
from harness import require_sdk, ROOT, parse_sse, user_message

V1 = {"a2a-version": "1.0", "content-type": "application/json"}


def rest(server, verb, path, body=None, query="", headers=V1):
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (body or b"")
    resp = server.handle_http(verb, path, query, dict(headers), data)
    if resp.stream is not None:
        return resp.status, dict(resp.headers), parse_sse(b"".join(resp.stream))
    return resp.status, dict(resp.headers), json.loads(resp.body) if resp.body else None


def send(server, text="hi", path="/message:send", **extra):
    status, _, body = rest(server, "POST", path, {"message": user_message(text), **extra})
    assert status == 200, body
    return body


def assert_status_error(status, body, http_status, reason):
    assert status == http_status
    error = body["error"]
    assert error["code"] == http_status
    assert error["status"] == next(
        c for c in _error_classes() if c.reason == reason).grpc_status
    assert error["details"][0]["@type"] == "type.googleapis.com/google.rpc.ErrorInfo"
    assert error["details"][0]["reason"] == reason
    assert error["message"]


def _error_classes():
    todo, out = [a2a_min.A2AError], []
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


# -- routes ------------------------------------------------------------------------

def test_every_route(server):
    task = send(server)["task"]
    tid = task["id"]
    assert rest(server, "GET", f"/tasks/{tid}")[2]["id"] == tid
    assert rest(server, "GET", "/tasks")[2]["tasks"][0]["id"] == tid
    status, _, body = rest(server, "POST", f"/tasks/{tid}:cancel", {})
    assert_status_error(status, body, 400, "TASK_NOT_CANCELABLE")
    waiting = send(server, "wait")["task"]["id"]
    status, _, body = rest(server, "POST", f"/tasks/{waiting}:cancel")
    assert status == 200 and body["status"]["state"] == "TASK_STATE_CANCELED"
    status, headers, events = rest(server, "POST", "/message:stream",
                                   {"message": user_message("chunks")})
    assert headers["Content-Type"] == "text/event-stream"
    assert "task" in events[0][1] and events[-1][1]["statusUpdate"]["status"]["state"] == \
        "TASK_STATE_COMPLETED"
    for verb, path in (("POST", f"/tasks/{tid}/pushNotificationConfigs"),
                       ("GET", f"/tasks/{tid}/pushNotificationConfigs"),
                       ("GET", f"/tasks/{tid}/pushNotificationConfigs/c1"),
                       ("DELETE", f"/tasks/{tid}/pushNotificationConfigs/c1")):
        body = {"url": "https://example.com/h"} if verb == "POST" else None
        status, _, answer = rest(server, verb, path, body)
        assert_status_error(status, answer, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED")
    status, _, body = rest(server, "GET", "/extendedAgentCard")
    assert_status_error(status, body, 400, "UNSUPPORTED_OPERATION")


@pytest.mark.parametrize("verb", ["GET", "POST"])
def test_subscribe_with_either_verb_follows_the_task(server, verb):
    import threading
    import time
    task_id = send(server, "wait")["task"]["id"]
    box = {}
    watcher = threading.Thread(target=lambda: box.update(out=rest(
        server, verb, f"/tasks/{task_id}:subscribe", {} if verb == "POST" else None)))
    watcher.start()
    time.sleep(0.1)
    rest(server, "POST", f"/tasks/{task_id}:cancel")
    watcher.join(5)
    status, headers, events = box["out"]
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert events[0][1]["task"]["id"] == task_id
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


def test_tenant_prefix_fills_and_isolates(server):
    mine = send(server, path="/acme/message:send")["task"]
    assert rest(server, "GET", f"/acme/tasks/{mine['id']}")[2]["id"] == mine["id"]
    status, _, body = rest(server, "GET", f"/tasks/{mine['id']}")      # another tenant
    assert_status_error(status, body, 404, "TASK_NOT_FOUND")
    assert rest(server, "GET", "/acme/tasks")[2]["totalSize"] == 1
    assert rest(server, "GET", "/other/tasks")[2]["totalSize"] == 0
    status, _, body = rest(server, "POST", "/acme/message:send",
                           {"message": user_message("x"), "tenant": "evil"})
    assert_status_error(status, body, 400, "INVALID_PARAMS")
    assert "contradicts" in body["error"]["message"]
    same = rest(server, "POST", "/acme/message:send", {"message": user_message("x"),
                                                         "tenant": "acme"})
    assert same[0] == 200


def test_path_id_contradicting_body_is_invalid(server):
    tid = send(server, "wait")["task"]["id"]
    status, _, body = rest(server, "POST", f"/tasks/{tid}:cancel", {"id": "other"})
    assert_status_error(status, body, 400, "INVALID_PARAMS")


# -- query parameters ----------------------------------------------------------------

def test_list_query_parameters(server):
    import time
    done = send(server)["task"]
    time.sleep(0.002)
    waiting = send(server, "wait", )["task"]
    q = rest(server, "GET", "/tasks", query="status=TASK_STATE_INPUT_REQUIRED")[2]
    assert [t["id"] for t in q["tasks"]] == [waiting["id"]]
    q = rest(server, "GET", "/tasks", query="status=6")[2]
    assert q["totalSize"] == 1
    q = rest(server, "GET", "/tasks", query=f"contextId={done['contextId']}&includeArtifacts=true")[2]
    assert [t["id"] for t in q["tasks"]] == [done["id"]] and "artifacts" in q["tasks"][0]
    q = rest(server, "GET", "/tasks", query="pageSize=1&historyLength=0")[2]
    assert len(q["tasks"]) == 1 and "history" not in q["tasks"][0] and q["nextPageToken"]
    q2 = rest(server, "GET", "/tasks", query=f"pageSize=1&pageToken={q['nextPageToken']}")[2]
    assert q2["tasks"][0]["id"] == done["id"]
    q = rest(server, "GET", "/tasks",
             query="statusTimestampAfter=" + waiting["status"]["timestamp"].replace(":", "%3A"))[2]
    assert [t["id"] for t in q["tasks"]] == [waiting["id"]]
    got = rest(server, "GET", f"/tasks/{done['id']}", query="historyLength=0")[2]
    assert "history" not in got


@pytest.mark.parametrize("query, field", [
    ("pageSize=0", "pageSize"), ("pageSize=abc", "pageSize"), ("status=DONE", "status"),
    ("includeArtifacts=yes", "includeArtifacts"), ("historyLength=-1", "historyLength"),
    ("statusTimestampAfter=yesterday", "statusTimestampAfter"), ("pageToken=%%%", "pageToken"),
    ("pageSize=5&pageSize=6", "pageSize")])
def test_bad_query_values_match_the_jsonrpc_errors(server, query, field):
    status, _, body = rest(server, "GET", "/tasks", query=query)
    assert_status_error(status, body, 400, "INVALID_PARAMS")
    violations = [d for d in body["error"]["details"] if d["@type"].endswith("BadRequest")]
    assert violations[0]["fieldViolations"][0]["field"] == field


def test_query_routes_take_no_repeated_field():
    """A GET or DELETE route's request comes from the query alone, one value
    a parameter (_query_to_params): none of those messages has a repeated field."""
    for verb, _, method in a2a_min.ROUTES:
        if verb in ("GET", "DELETE"):
            rows = a2a_min.MESSAGES[a2a_min.METHODS[method][0]]
            assert not [row for row in rows if "repeated" in row[3].split()], method


def test_query_and_jsonrpc_give_the_same_error(server):
    from harness import Client
    jsonrpc = Client(server).error("ListTasks", {"pageSize": 500})
    status, _, body = rest(server, "GET", "/tasks", query="pageSize=500")
    assert body["error"]["message"] == jsonrpc["message"]
    assert body["error"]["details"] == jsonrpc["data"]


# -- media types and error shapes --------------------------------------------------------

def test_answers_in_the_media_type_of_the_request(server):
    a2a = {**V1, "content-type": "application/a2a+json"}
    status, headers, _ = rest(server, "POST", "/message:send", {"message": user_message("x")},
                              headers=a2a)
    assert status == 200 and headers["Content-Type"] == "application/a2a+json"
    status, headers, _ = rest(server, "POST", "/message:send", {"message": user_message("x")})
    assert headers["Content-Type"] == "application/json"
    status, headers, _ = rest(server, "GET", "/tasks", headers={"a2a-version": "1.0"})
    assert headers["Content-Type"] == "application/json"
    status, headers, _ = rest(server, "GET", "/tasks/nope", headers={**a2a, "accept":
                                                                       "application/a2a+json"})
    assert status == 404 and headers["Content-Type"] == "application/a2a+json"


def test_wrong_media_type_is_415(server):
    status, _, body = rest(server, "POST", "/message:send",
                           json.dumps({"message": user_message("x")}).encode(),
                           headers={"a2a-version": "1.0", "content-type": "text/plain"})
    assert_status_error(status, body, 415, "CONTENT_TYPE_NOT_SUPPORTED")
    assert "application/json" in body["error"]["message"]


def test_unknown_route_404_and_wrong_verb_405(server):
    status, _, body = rest(server, "GET", "/nothing/here/at/all")
    assert status == 404 and body["error"]["status"] == "UNIMPLEMENTED"
    assert "/message:send" in body["error"]["message"]
    resp = server.handle_http("DELETE", "/message:send", "", dict(V1), b"")
    body = json.loads(resp.body)
    assert resp.status == 405 and ("Allow", "POST") in resp.headers
    assert body["error"]["code"] == 405
    resp = server.handle_http("PUT", "/tasks/abc", "", dict(V1), b"")
    assert resp.status == 405 and ("Allow", "GET") in resp.headers


def test_body_that_is_not_json_is_400_with_the_position(server):
    status, _, body = rest(server, "POST", "/message:send", b'{"message": {"role": }')
    assert_status_error(status, body, 400, "PARSE_ERROR")
    assert "line 1 column 22" in body["error"]["message"]
    status, _, body = rest(server, "POST", "/message:send", b"[1, 2]")
    assert_status_error(status, body, 400, "INVALID_PARAMS")


def test_version_and_extension_errors_in_status_shape(server):
    status, _, body = rest(server, "GET", "/tasks", headers={"a2a-version": "99.0"})
    assert_status_error(status, body, 400, "VERSION_NOT_SUPPORTED")
    status, _, body = rest(server, "GET", "/tasks", headers={})
    assert_status_error(status, body, 400, "VERSION_NOT_SUPPORTED")
    assert rest(server, "GET", "/tasks", query="A2A-Version=1.0", headers={})[0] == 200


def test_sse_events_are_stream_responses_with_ids(server):
    status, _, events = rest(server, "POST", "/message:stream", {"message": user_message("wait")})
    assert [i for i, _ in events] == list(range(len(events)))
    assert set(events[0][1]) == {"task"}
    assert events[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


# -- bad input ----------------------------------------------------------------------

@pytest.mark.parametrize("path", [
    "/tasks/..%2F..", "/tasks/%2e%2e/%2e%2e", "/tasks/" + "x" * 10_000, "/tasks/%E2%98%83",
    "/tasks/%00", "/tasks//:cancel", "/tasks/:cancel", "/tasks/%ZZ", "/%2F/tasks/x"])
def test_odd_ids_in_paths_are_clear_4xx(server, path):
    for verb in ("GET", "POST"):
        resp = server.handle_http(verb, path, "", dict(V1), b"")
        assert 400 <= resp.status < 500, (verb, path, resp.status)
        body = json.loads(resp.body)
        assert body["error"]["code"] == resp.status


def test_body_on_get_is_refused(server):
    status, _, body = rest(server, "GET", "/tasks", {"pageSize": 5})
    assert_status_error(status, body, 400, "INVALID_REQUEST")
    assert "query string" in body["error"]["message"]


def test_huge_and_malformed_query_strings(server):
    status, _, body = rest(server, "GET", "/tasks", query="&".join(f"x{i}=1" for i in range(5000)))
    assert status == 400 and body["error"]["code"] == 400
    status, _, body = rest(server, "GET", "/tasks", query="=&&==")
    assert status == 400


def test_route_table_matches_the_proto_service():
    """ROUTES and METHODS against the google.api.http annotations and rpc
    signatures of lf.a2a.v1.A2AService (from the reference SDK's generated
    module, in a subprocess)."""
    require_sdk()
    proc = subprocess.run([sys.executable, f"{ROOT}/tests/proto_service.py"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    service = json.loads(proc.stdout)
    assert set(service) == set(a2a_min.METHODS)
    for method, rpc in service.items():
        request, response, streams = a2a_min.METHODS[method]
        assert rpc["input"] == "lf.a2a.v1." + request
        assert rpc["output"] in ("lf.a2a.v1." + response, response)
        assert rpc["server_streaming"] == streams
        ours = {(verb, path) for verb, path, m in a2a_min.ROUTES if m == method}
        for verb, path in rpc["http"]:
            path = path.replace("{task_id=*}", "{taskId}").replace("{id=*}", "{id}")
            if path.startswith("/{tenant}"):
                assert (verb, path[len("/{tenant}"):]) in ours, (method, verb, path)
            else:
                assert (verb, path) in ours, (method, verb, path)
