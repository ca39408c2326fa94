"""a2a_min with the benchmark's echo agent: one artifact echoing the text, then COMPLETED.

Usage: python benchmarks/echo_server.py PORT [threads|asyncio]
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402

if __name__ == "__main__":
    server = a2a_min.Server(lambda text: text, name="a2a_min echo", description="echo")
    if len(sys.argv) > 2 and sys.argv[2] == "asyncio":
        import asyncio
        asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", int(sys.argv[1])))
    else:
        a2a_min.serve(server, "127.0.0.1", int(sys.argv[1]))
