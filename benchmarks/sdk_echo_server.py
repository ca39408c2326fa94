"""The reference SDK's server with the same echo agent, for side-by-side benchmarks.

Needs its own venv: pip install 'a2a-sdk[http-server]==1.3.0' uvicorn
(with A2A_SDK_STORE: 'a2a-sdk[http-server,postgresql]==1.3.0').
Usage: python benchmarks/sdk_echo_server.py PORT

A2A_SDK_STORE=postgresql://... keeps the tasks in PostgreSQL with the SDK's own
DatabaseTaskStore (SQLAlchemy, asyncpg), as a2a_min's PostgresStore does.
"""

import os
import sys

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.routes.rest_routes import create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, Task, TaskState, TaskStatus)
from starlette.applications import Starlette


async def started(context, event_queue):
    """The task's first event, if it is new (SUBMITTED, with the message): its TaskUpdater."""
    if not context.current_task:
        await event_queue.enqueue_event(Task(
            id=context.task_id, context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message]))
    return TaskUpdater(event_queue, context.task_id, context.context_id)


class Echo(AgentExecutor):
    """Task mode: one artifact echoing the text, then COMPLETED."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await started(context, event_queue)
        await updater.add_artifact([Part(text=context.get_user_input())])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def card_for(port):
    base = f"http://127.0.0.1:{port}"
    return AgentCard(
        name="sdk echo", description="echo", version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base + "/", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base, protocol_binding="HTTP+JSON", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])])


def task_store():
    url = os.environ.get("A2A_SDK_STORE")
    if not url:
        return InMemoryTaskStore()
    from a2a.server.tasks import DatabaseTaskStore
    from sqlalchemy.ext.asyncio import create_async_engine
    url = url.replace("postgresql://", "postgresql+asyncpg://", 1)
    return DatabaseTaskStore(create_async_engine(url, pool_size=8), table_name="sdk_tasks")


def app(port):
    card = card_for(port)
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=task_store(),
                                    agent_card=card)
    routes = (create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/")
              + create_rest_routes(handler))
    return Starlette(routes=routes)


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(app(port), host="127.0.0.1", port=port, log_level="warning")
