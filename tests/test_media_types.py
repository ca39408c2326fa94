"""A message's parts must be of media types the agent takes (specification
3.3.2, ContentTypeNotSupportedError of 3.1.1): its card's defaultInputModes
and its skills' inputModes, on every binding and host."""

import a2a_min
from harness import user_message

UNSUPPORTED = {"raw": "dGNr", "mediaType": "application/x-unsupported-type-12345"}


def _message(*parts):
    return {"message": {**user_message("x"), "parts": list(parts)}}


def test_a_part_of_a_type_the_card_does_not_list_is_refused(client):
    error = client.error("SendMessage", _message({"text": "hello"}, UNSUPPORTED))
    assert error["code"] == -32005, error
    assert "application/x-unsupported-type-12345" in error["message"]
    assert "text/plain" in error["message"] and "input_modes" in error["message"]
    assert client.result("ListTasks", {})["tasks"] == []       # no task was made


def test_a_stream_is_refused_alike_before_it_begins(client):
    answer = client.stream("SendStreamingMessage", _message(UNSUPPORTED))
    error = answer["error"] if isinstance(answer, dict) else answer[0][1]["error"]
    assert error["code"] == -32005, error


def test_text_takes_no_media_type_and_parameters_and_case_do_not_matter(client):
    for part in ({"text": "a"}, {"text": "b", "mediaType": "text/plain; charset=utf-8"},
                 {"text": "c", "mediaType": "Text/Plain"}):
        task = client.result("SendMessage", _message(part))["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_data_is_json_and_needs_the_agent_to_take_it(make_client):
    data = {"data": {"n": 1}}
    plain = make_client(a2a_min.Server(lambda text: "ok"))
    assert plain.error("SendMessage", _message(data))["code"] == -32005
    both = make_client(a2a_min.Server(lambda text: "ok",
                                      input_modes=["text/plain", "application/json"]))
    assert both.result("SendMessage", _message(data))["task"]["status"]["state"] == \
        "TASK_STATE_COMPLETED"


def test_a_skills_input_modes_and_wildcards_count(make_client):
    png = {"raw": "iVBORw==", "mediaType": "image/png"}
    skill = {"id": "look", "name": "Look", "description": "Looks.", "tags": ["image"],
             "inputModes": ["image/png"]}
    for server in (a2a_min.Server(lambda text: "ok", skills=[skill]),
                   a2a_min.Server(lambda text: "ok", input_modes=["text/plain", "image/*"]),
                   a2a_min.Server(lambda text: "ok", input_modes=["*/*"])):
        client = make_client(server)
        assert client.result("SendMessage", _message(png))["task"]["status"]["state"] == \
            "TASK_STATE_COMPLETED"
    only_png = make_client(a2a_min.Server(lambda text: "ok", input_modes=["image/*"]))
    assert only_png.error("SendMessage", _message({"text": "hi"}))["code"] == -32005


def test_a_file_without_a_media_type_is_the_agents_to_judge(client):
    task = client.result("SendMessage", _message({"raw": "eA==", "filename": "x.bin"}))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_http_json_answers_400_with_the_reason(live):
    import http.client
    import json
    connection = http.client.HTTPConnection("127.0.0.1", live.port, timeout=5)
    connection.request("POST", "/message:send", json.dumps(_message(UNSUPPORTED)),
                       {"Content-Type": "application/json", "A2A-Version": "1.0"})
    response = connection.getresponse()
    body = json.loads(response.read())
    assert response.status == 400, body
    assert body["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    assert body["error"]["details"][0]["metadata"]["supportedMediaTypes"] == "text/plain"
