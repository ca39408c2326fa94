"""The reference SDK's 0.3 server (a2a-sdk 0.3.x), an agent that speaks only
A2A 0.3, for tests of a2a_client against it. Run in the 0.3 venv:

    python tests/sdk03_server.py PORT [rest] [grpc=PORT]

The agent: "wait" asks for input (a task that waits), anything else gets one
artifact echoing the text (and the message's files, as they came), and the
task completes. With "rest", the card lists the SDK's 0.3 HTTP+JSON
application too, mounted at /rest (as the interop kit's 0.3 agent has it);
with "grpc=PORT", the SDK's 0.3 gRPC server (a2a.v1.A2AService) on PORT.
"""

import asyncio
import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import (AgentCapabilities, AgentCard, AgentInterface, AgentSkill, FilePart, Part,
                       TextPart)
from a2a.utils import new_agent_text_message, new_task


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        if text == "wait":
            await updater.requires_input(new_agent_text_message("say more", task.context_id,
                                                                task.id), final=True)
            return
        await updater.start_work()
        files = [p for p in context.message.parts if isinstance(p.root, FilePart)]
        await updater.add_artifact([Part(root=TextPart(text="echo: " + text)), *files])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def main(port, rest=False, grpc_port=None):
    more = [AgentInterface(url=f"http://127.0.0.1:{port}/rest/", transport="HTTP+JSON")] \
        if rest else []
    if grpc_port:
        more.append(AgentInterface(url=f"127.0.0.1:{grpc_port}", transport="GRPC"))
    card = AgentCard(
        name="SDK 0.3 echo", description="An agent that speaks only A2A 0.3.", version="1.0.0",
        url=f"http://127.0.0.1:{port}/", capabilities=AgentCapabilities(streaming=True,
                                                                        push_notifications=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echo", tags=["echo"])],
        additional_interfaces=more or None)
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(),
                                    push_config_store=InMemoryPushNotificationConfigStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()
    if rest:
        from a2a.server.apps import A2ARESTFastAPIApplication
        from starlette.applications import Starlette
        from starlette.routing import Mount
        app = Starlette(routes=[Mount("/rest", A2ARESTFastAPIApplication(card, handler).build()),
                                Mount("/", app)])
    if not grpc_port:
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
        return

    async def both():
        import grpc
        from a2a.grpc import a2a_pb2_grpc
        from a2a.server.request_handlers import GrpcHandler
        grpc_server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(card, handler), grpc_server)
        grpc_server.add_insecure_port(f"127.0.0.1:{grpc_port}")
        await grpc_server.start()
        await uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                           log_level="warning")).serve()
    asyncio.run(both())


if __name__ == "__main__":
    options = sys.argv[2:]
    main(int(sys.argv[1]), "rest" in options,
         next((int(o[5:]) for o in options if o.startswith("grpc=")), None))
