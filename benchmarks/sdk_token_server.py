"""The reference SDK's server with the token benchmark's agent, for side-by-side runs.

Needs its own venv: pip install 'a2a-sdk[http-server]==1.3.0' uvicorn
Usage: python benchmarks/sdk_token_server.py PORT

The agent adds N chunks of "tok " to one artifact (N the message's text), each
with TaskUpdater.add_artifact(append=True), the last with last_chunk=True,
then completes: what benchmarks/token_server.py's generator makes a2a_min send.
"""

import sys
import uuid

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes.agent_card_routes import create_agent_card_routes
from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import Part
from starlette.applications import Starlette

from sdk_echo_server import card_for, started


class Tokens(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = await started(context, event_queue)
        count, artifact_id = int(context.get_user_input() or 1), str(uuid.uuid4())
        for i in range(count):
            await updater.add_artifact([Part(text="tok ")], artifact_id=artifact_id,
                                       append=i > 0, last_chunk=i == count - 1)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


if __name__ == "__main__":
    port = int(sys.argv[1])
    card = card_for(port)
    handler = DefaultRequestHandler(agent_executor=Tokens(), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    app = Starlette(routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/"))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
