"""The demo agent as a WSGI application, for gunicorn, uwsgi or mod_wsgi.

    gunicorn -k gthread --threads 8 -b 127.0.0.1:8000 examples.wsgi_app:app

Use a threaded worker: each open SSE stream holds a thread while it waits.
With several worker processes (-w 4), give them one store to share:

    A2A_STORE=tasks.db gunicorn -w 4 -k gthread --threads 8 -b 127.0.0.1:8000 examples.wsgi_app:app

A2A_STORE is a file name or an sqlite: URL (a2a_store.open_store); without it,
each process keeps its own tasks in memory. WSGI has no shutdown hook, so a
worker stopped while an agent runs leaves its task WORKING until its lease runs
out (30 s), then FAILED; gunicorn can end such turns at once (see
Server.shutdown) from a config file:

    # gunicorn.conf.py
    def worker_exit(arbiter, worker):
        from examples.wsgi_app import server
        server.shutdown(5)
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
server = a2a_min.demo_server(store=STORE and a2a_store.open_store(STORE),
                             public_url=os.environ.get("A2A_PUBLIC_URL"))
app = a2a_min.wsgi_app(server)
