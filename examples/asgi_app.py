"""The demo agent as an ASGI application, for uvicorn or hypercorn.

    uvicorn examples.asgi_app:app --port 8000
    A2A_STORE=tasks.db uvicorn examples.asgi_app:app --port 8000 --workers 4

A2A_STORE is a file name or an sqlite: URL (a2a_store.open_store) of the store
the worker processes share; without it, each keeps its own tasks in memory.

It can also be mounted under a prefix inside another ASGI app (Starlette's
Mount("/a2a", app=app)); the card then shows the prefixed URLs.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402

# A2A_STORE: a file name, sqlite:PATH or postgresql://...: the tasks are kept
# there (the companion a2a_store.py); unset, in memory (a2a_min.py alone).
STORE = os.environ.get("A2A_STORE")
if STORE:
    import a2a_store  # noqa: E402

# A2A_PUBLIC_URL: the URL clients reach it at, behind a proxy or on a platform
# (https://agent-xyz.a.run.app): the card names it, and requests naming its host
# are answered (others get 421: a2a_min.py, "Who may call").
app = a2a_min.asgi_app(a2a_min.demo_server(store=STORE and a2a_store.open_store(STORE),
                                           public_url=os.environ.get("A2A_PUBLIC_URL")))
