"""a2a_min with the token benchmark's agent: N chunks of "tok " per turn, N the message's text.

Usage: python benchmarks/token_server.py PORT [threads|asyncio] [DIR]

The agent is a generator (an async generator on the asyncio server, what an
agent on an event loop is): a2a_min streams each str it yields as a chunk of
one artifact (append, lastChunk on the last), as a language model's tokens
would be. DIR: import a2a_min from that checkout instead (a before/after run).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, sys.argv[3] if len(sys.argv) > 3 else os.path.join(HERE, ".."))

import a2a_min  # noqa: E402


def tokens(text):
    for _ in range(int(text or 1)):
        yield "tok "


async def async_tokens(text):
    for _ in range(int(text or 1)):
        yield "tok "


if __name__ == "__main__":
    host = sys.argv[2] if len(sys.argv) > 2 else "threads"
    server = a2a_min.Server(async_tokens if host == "asyncio" else tokens,
                            name="a2a_min tokens", description="tokens")
    if host == "asyncio":
        import asyncio
        asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", int(sys.argv[1])))
    else:
        a2a_min.serve(server, "127.0.0.1", int(sys.argv[1]))
