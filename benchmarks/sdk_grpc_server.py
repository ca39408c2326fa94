"""The reference SDK's gRPC server with the same echo agent, for side-by-side benchmarks.

Needs its own venv: pip install 'a2a-sdk[grpc]==1.3.0'
Usage: python benchmarks/sdk_grpc_server.py PORT
"""

import asyncio
import os
import sys

import grpc
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.grpc_handler import GrpcHandler
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import a2a_pb2_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdk_echo_server import Echo, card_for  # noqa: E402


async def main(port):
    card = card_for(port)
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    server = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
