"""Drive an A2A server with the reference SDK's client (a2a-sdk, from PyPI).

Run in its own process (its generated protobuf module registers lf.a2a.v1,
which must not meet any other copy in one interpreter):

    python tests/sdk_client.py http://127.0.0.1:PORT JSONRPC

Prints one JSON object describing what the client saw; the test suite checks it.
"""

import asyncio
import json
import os
import sys
import uuid

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, Message, Part, Role, SendMessageRequest, SubscribeToTaskRequest,
    TaskPushNotificationConfig)
from google.protobuf.json_format import MessageToDict


def user_message(text, **fields):
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                   parts=[Part(text=text)], **fields)


async def collect(stream):
    return [MessageToDict(event) for event in [e async for e in stream]]


async def main(url, binding):
    out = {}
    options = {}
    if binding == "GRPC":
        import grpc
        options["grpc_channel_factory"] = grpc.aio.insecure_channel
        if os.environ.get("A2A_TLS_CA"):       # gRPC over TLS: the card says host:port only

            def read(name):
                path = os.environ.get(name)
                return open(path, "rb").read() if path else None
            credentials = grpc.ssl_channel_credentials(
                read("A2A_TLS_CA"), read("A2A_TLS_KEY"), read("A2A_TLS_CERT"))
            options["grpc_channel_factory"] = lambda url: grpc.aio.secure_channel(url, credentials)
    # Over TLS (tests/test_tls.py): the CA to trust, and a client certificate.
    verify = True
    if os.environ.get("A2A_TLS_CA"):
        import ssl
        verify = ssl.create_default_context(cafile=os.environ["A2A_TLS_CA"])
        if os.environ.get("A2A_TLS_CERT"):
            verify.load_cert_chain(os.environ["A2A_TLS_CERT"], os.environ.get("A2A_TLS_KEY"))
    async with httpx.AsyncClient(timeout=30, verify=verify) as http:
        plain = await create_client(url, ClientConfig(
            streaming=False, httpx_client=http, supported_protocol_bindings=[binding], **options))
        streaming = await create_client(url, ClientConfig(
            streaming=True, httpx_client=http, supported_protocol_bindings=[binding], **options))

        events = await collect(plain.send_message(SendMessageRequest(message=user_message("hello"))))
        task = events[0]["task"]
        out["send"] = task
        out["get"] = MessageToDict(await plain.get_task(GetTaskRequest(id=task["id"])))
        out["get_history0"] = MessageToDict(
            await plain.get_task(GetTaskRequest(id=task["id"], history_length=0)))
        out["list"] = MessageToDict(await plain.list_tasks(ListTasksRequest(page_size=2)))
        out["stream"] = await collect(streaming.send_message(
            SendMessageRequest(message=user_message("stream me please"))))

        # A task that waits for input can be continued, subscribed to and canceled.
        waiting = (await collect(plain.send_message(
            SendMessageRequest(message=user_message("wait")))))[0]["task"]
        out["waiting"] = waiting
        sub = streaming.subscribe(SubscribeToTaskRequest(id=waiting["id"]))
        first = await sub.__anext__()
        out["subscribe_first"] = MessageToDict(first)
        canceled = await plain.cancel_task(CancelTaskRequest(id=waiting["id"]))
        out["cancel"] = MessageToDict(canceled)
        out["subscribe_rest"] = [MessageToDict(e) async for e in sub]
        try:
            await plain.cancel_task(CancelTaskRequest(id=waiting["id"]))
            out["cancel_again"] = "no error"
        except Exception as exc:  # the SDK raises its A2A error classes
            out["cancel_again"] = f"{type(exc).__name__}: {exc}"
        try:
            await plain.get_task(GetTaskRequest(id="no-such-task"))
            out["get_missing"] = "no error"
        except Exception as exc:  # the SDK raises its A2A error classes
            out["get_missing"] = f"{type(exc).__name__}: {exc}"
        # Push configs answer an error (the card says pushNotifications: false);
        # the extended card is served (the card says extendedAgentCard: true).
        calls = {
            "create_push": lambda: plain.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task["id"], url="https://example.com/h")),
            "get_push": lambda: plain.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task["id"], id="c1")),
            "list_push": lambda: plain.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task["id"])),
            "delete_push": lambda: plain.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task["id"], id="c1")),
            "extended_card": lambda: plain.get_extended_agent_card(GetExtendedAgentCardRequest()),
        }
        for name, make_call in calls.items():
            try:
                answer = await make_call()
                out[name] = MessageToDict(answer) if answer is not None else "no error"
            except Exception as exc:  # the SDK raises its A2A error classes
                out[name] = f"{type(exc).__name__}: {exc}"
        await plain.close()
        await streaming.close()
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "JSONRPC"))
