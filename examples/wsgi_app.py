"""The demo agent as a WSGI application, for gunicorn, uwsgi or mod_wsgi.

    gunicorn -k gthread --threads 8 -b 127.0.0.1:8000 examples.wsgi_app:app

Use a threaded worker: each open SSE stream holds a thread while it waits.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402

app = a2a_min.wsgi_app(a2a_min.demo_server())
