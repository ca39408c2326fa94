"""Drive an A2A server with the reference SDK's 0.3 client (a2a-sdk 0.3.x, from PyPI).

Run in a virtual environment of its own (a2a-sdk 0.3 and 1.x cannot share one):

    python tests/sdk03_client.py http://127.0.0.1:PORT [JSONRPC|HTTP+JSON]

Prints one JSON object of what the client saw; tests/test_v03.py checks it.
The 0.3 client has no list or delete of push configs: those two are sent with
httpx, as the SDK's own request models (JSON-RPC), or to the 0.3 routes
(HTTP+JSON), and their answers parsed by the SDK's own models (which
validate them).
"""

import asyncio
import base64
import json
import sys
import uuid

import httpx
from a2a.client import ClientConfig, ClientFactory
from a2a.types import (
    DeleteTaskPushNotificationConfigParams, DeleteTaskPushNotificationConfigRequest,
    DeleteTaskPushNotificationConfigResponse, FilePart, FileWithBytes,
    GetTaskPushNotificationConfigParams,
    ListTaskPushNotificationConfigParams, ListTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigResponse, Message, MessageSendConfiguration, Part,
    PushNotificationConfig, Role, TaskIdParams, TaskPushNotificationConfig, TaskQueryParams,
    TextPart)


FILE = b"\x0a\x85\x01\xff\x00 not UTF-8"


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def message(text, **fields):
    return Message(message_id=str(uuid.uuid4()), role=Role.user,
                   parts=[Part(root=TextPart(text=text))], **fields)


def seen(event):
    """A (task, update) pair or a Message, as JSON."""
    if isinstance(event, tuple):
        task, update = event
        return {"task": dump(task), "update": dump(update) if update is not None else None}
    return {"message": dump(event)}


async def main(url, binding):
    out = {}
    channels = {}
    if binding == "GRPC":
        import grpc
        channels["grpc_channel_factory"] = grpc.aio.insecure_channel
    async with httpx.AsyncClient(timeout=30) as http:
        plain = await ClientFactory.connect(url, ClientConfig(
            streaming=False, httpx_client=http, supported_transports=[binding], **channels))
        streaming = await ClientFactory.connect(url, ClientConfig(
            streaming=True, httpx_client=http, supported_transports=[binding], **channels))
        out["card"] = dump(await plain.get_card())
        out["send"] = [seen(e) async for e in plain.send_message(message("hello"))]
        task_id = out["send"][-1]["task"]["id"]
        out["get"] = dump(await plain.get_task(TaskQueryParams(id=task_id, history_length=1)))
        out["stream"] = [seen(e) async for e in streaming.send_message(message("chunks"))]
        out["direct"] = [seen(e) async for e in plain.send_message(message("direct"))]
        # A file's bytes (not UTF-8), as the SDK keeps them: base64 text.
        file = FilePart(file=FileWithBytes(bytes=base64.b64encode(FILE).decode(),
                                           mime_type="application/octet-stream"))
        out["file"] = [seen(e) async for e in plain.send_message(Message(
            message_id=str(uuid.uuid4()), role=Role.user,
            parts=[Part(root=TextPart(text="file")), Part(root=file)]))]

        # A task that waits for input: continued, then another followed and canceled.
        waiting = [seen(e) async for e in plain.send_message(message("wait"))][-1]["task"]
        out["waiting"] = waiting
        out["continued"] = [seen(e) async for e in plain.send_message(message(
            "more", task_id=waiting["id"], context_id=waiting["contextId"]))]
        second = [seen(e) async for e in plain.send_message(message("wait"))][-1]["task"]
        followed = []

        async def follow():
            async for event in streaming.resubscribe(TaskIdParams(id=second["id"])):
                followed.append(seen(event))
        follower = asyncio.create_task(follow())
        await asyncio.sleep(0.5)
        out["canceled"] = dump(await plain.cancel_task(TaskIdParams(id=second["id"])))
        await asyncio.wait_for(follower, 10)
        out["followed"] = followed

        # A task that waits for input, followed (resubscribe), then continued
        # by another client: the follower sees it through to COMPLETED.
        third = [seen(e) async for e in plain.send_message(message("wait"))][-1]["task"]
        across = []

        async def follow_across():
            async for event in streaming.resubscribe(TaskIdParams(id=third["id"])):
                across.append(seen(event))
        follower = asyncio.create_task(follow_across())
        await asyncio.sleep(0.5)
        other = await ClientFactory.connect(url, ClientConfig(
            streaming=False, httpx_client=http, supported_transports=[binding], **channels))
        out["continued_elsewhere"] = [seen(e) async for e in other.send_message(message(
            "more", task_id=third["id"], context_id=third["contextId"]))]
        try:
            await asyncio.wait_for(follower, 10)
        except Exception as error:                  # what the SDK raised, for the test to show
            across.append({"error": f"{type(error).__name__}: {error}"})
        out["followed_across"] = across

        # A task that is still working, sent without blocking.
        out["nonblocking"] = [seen(e) async for e in plain.send_message(
            message("slow1"), configuration=MessageSendConfiguration(blocking=False))]

        config = TaskPushNotificationConfig(task_id=task_id, push_notification_config=(
            PushNotificationConfig(id="h1", url="https://hooks.invalid/a2a", token="t0k")))
        out["set"] = dump(await plain.set_task_callback(config))
        out["get_config"] = dump(await plain.get_task_callback(GetTaskPushNotificationConfigParams(
            id=task_id, push_notification_config_id="h1")))
        if binding == "GRPC":                       # (the SDK's stub: its client has neither)
            from a2a.grpc import a2a_pb2, a2a_pb2_grpc
            from google.protobuf.json_format import MessageToDict
            card_grpc = next(i["url"] for i in out["card"]["additionalInterfaces"]
                             if i["transport"] == "GRPC")
            async with grpc.aio.insecure_channel(card_grpc) as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                listed = await stub.ListTaskPushNotificationConfig(
                    a2a_pb2.ListTaskPushNotificationConfigRequest(parent=f"tasks/{task_id}"))
                out["list"] = {"result": [dump(TaskPushNotificationConfig(
                    task_id=task_id, push_notification_config=PushNotificationConfig(
                        **MessageToDict(p.push_notification_config,
                                        preserving_proto_field_name=True))))
                    for p in listed.configs]}
                await stub.DeleteTaskPushNotificationConfig(
                    a2a_pb2.DeleteTaskPushNotificationConfigRequest(
                        name=f"tasks/{task_id}/pushNotificationConfigs/h1"))
                out["delete"] = {"result": None}
        elif binding == "HTTP+JSON":
            from a2a.grpc import a2a_pb2
            from google.protobuf.json_format import MessageToDict, ParseDict
            listed = await http.get(f"{url}/v1/tasks/{task_id}/pushNotificationConfigs")
            out["list"] = {"result": [dump(c) for c in [
                TaskPushNotificationConfig(task_id=task_id, push_notification_config=(
                    PushNotificationConfig(**MessageToDict(p.push_notification_config,
                                                           preserving_proto_field_name=True))))
                for p in ParseDict(listed.json(), a2a_pb2.ListTaskPushNotificationConfigResponse()
                                   ).configs]]}
            deleted = await http.delete(f"{url}/v1/tasks/{task_id}/pushNotificationConfigs/h1")
            out["delete"] = {"result": None if deleted.json() == {} else deleted.json()}
        else:
            headers = {"Content-Type": "application/json"}
            listed = await http.post(url + "/", headers=headers, json=dump(
                ListTaskPushNotificationConfigRequest(
                    id=1, params=ListTaskPushNotificationConfigParams(id=task_id))))
            out["list"] = dump(ListTaskPushNotificationConfigResponse.model_validate(
                listed.json()))
            deleted = await http.post(url + "/", headers=headers, json=dump(
                DeleteTaskPushNotificationConfigRequest(id=2, params=(
                    DeleteTaskPushNotificationConfigParams(id=task_id,
                                                           push_notification_config_id="h1")))))
            out["delete"] = DeleteTaskPushNotificationConfigResponse.model_validate(
                deleted.json()).model_dump(mode="json", by_alias=True)
        try:
            await plain.get_task(TaskQueryParams(id="no-such-task"))
        except Exception as error:                  # the SDK's own error for -32001
            out["not_found"] = f"{type(error).__name__}: {error}"
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "JSONRPC"))
