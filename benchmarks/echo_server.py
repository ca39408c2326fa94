"""a2a_min with the benchmark's echo agent: one artifact echoing the text, then COMPLETED.

Usage: python benchmarks/echo_server.py PORT [threads|asyncio] [sync|async]

A2A_STORE (a file name: an SQLiteStore) keeps the tasks there instead of in
memory; A2A_WORKERS=N (threaded server, with A2A_STORE) runs N processes;
A2A_COMPAT=0.3 serves A2A 0.3 clients too (a2a_v03).

On the asyncio server the agent is an ``async def`` by default (what an agent
on an event loop is, and what the reference SDK's executor is); ``sync`` runs
the same echo as a plain function, on the worker threads.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402


async def async_echo(text):
    return text


def echo(text):
    return text


if __name__ == "__main__":
    host = sys.argv[2] if len(sys.argv) > 2 else "threads"
    kind = sys.argv[3] if len(sys.argv) > 3 else ("async" if host == "asyncio" else "sync")
    store = None
    if os.environ.get("A2A_STORE"):                # (a checkout from before a2a_store.py: in a2a_min)
        try:
            import a2a_store
        except ImportError:
            a2a_store = a2a_min
        store = a2a_store.open_store(os.environ["A2A_STORE"])
    compat = {"compat": os.environ["A2A_COMPAT"]} if os.environ.get("A2A_COMPAT") else {}
    # More Server options, as JSON (A2A_SERVER_OPTIONS='{"tracing": false}'); a checkout
    # that does not read it serves as it always did.
    options = json.loads(os.environ.get("A2A_SERVER_OPTIONS") or "{}")
    server = a2a_min.Server(async_echo if kind == "async" else echo,
                            name="a2a_min echo", description="echo", store=store, **compat,
                            **options)
    if host == "asyncio":
        import asyncio
        asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", int(sys.argv[1])))
    else:
        workers = int(os.environ.get("A2A_WORKERS", "1"))
        a2a_min.serve(server, "127.0.0.1", int(sys.argv[1]), **({"workers": workers}
                                                                 if workers > 1 else {}))
