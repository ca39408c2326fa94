"""The demo agent as an ASGI application, for uvicorn or hypercorn.

    uvicorn examples.asgi_app:app --port 8000

It can also be mounted under a prefix inside another ASGI app (Starlette's
Mount("/a2a", app=app)); the card then shows the prefixed URLs.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402

app = a2a_min.asgi_app(a2a_min.demo_server())
