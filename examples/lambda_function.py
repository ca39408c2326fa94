"""The demo agent as an AWS Lambda function (API Gateway REST or HTTP API, or a
function URL). Set the handler to lambda_function.handler and ship a2a_min.py
beside this file.

Streams are buffered: the whole event stream comes back as one
text/event-stream body when it ends (or when the invocation's time runs low).
The task store lives in the execution environment: warm invocations share it,
a cold start or another instance does not see it; keep tasks short, or pass
Server(store=...) a store backed by a database. A2A_STORE names an SQLite
file (a2a_store.open_store): it keeps tasks across warm invocations' restarts on
one instance's /tmp, but it cannot be shared between instances (SQLite needs a
local disk: not EFS). A2A_STORE=postgresql://... (ship a2a_postgres.py and
psycopg too) is shared by every instance: any of them answers for any task.
An agent's turn runs inside the invocation that started it (Lambda freezes the
process once it has answered), so give long work a blocking SendMessage.
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

handler = a2a_min.lambda_handler(
    a2a_min.demo_server(store=STORE and a2a_store.open_store(STORE)))
