"""The demo agent as an ASGI application, for uvicorn or hypercorn.

    uvicorn examples.asgi_app:app --port 8000
    A2A_STORE=tasks.db uvicorn examples.asgi_app:app --port 8000 --workers 4

A2A_STORE is a file name or an sqlite: URL (a2a_min.open_store) of the store
the worker processes share; without it, each keeps its own tasks in memory.

It can also be mounted under a prefix inside another ASGI app (Starlette's
Mount("/a2a", app=app)); the card then shows the prefixed URLs.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402

app = a2a_min.asgi_app(a2a_min.demo_server(store=a2a_min.open_store(os.environ.get("A2A_STORE"))))
