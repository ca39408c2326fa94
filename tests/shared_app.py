"""The test agent on a store that several processes share, for
test_store_shared.py: the same Server as a WSGI app (``wsgi``, for gunicorn),
an ASGI app (``asgi``, for uvicorn) and the threaded server with forked
workers (``python tests/shared_app.py --port P --workers N``).

The environment configures it: A2A_STORE (the SQLite file, required),
A2A_LEASE_TTL (seconds, 30), A2A_GRACE (seconds a graceful shutdown waits for
running turns, 10) and A2A_AGENT_LOG (a file the agent appends one JSON line
to when a turn starts, wakes from its wait, and ends: with its trace id, and
the traceparent of the turn that made its task).

Every answer carries ``X-Pid``: the process that served it, so a test can
tell which worker answered. The agent is harness.scenario_agent, plus
"countN:D" (N chunks of one artifact, D seconds apart; stops when canceled)."""

import faulthandler
import json
import os
import signal
import sys
import time

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                os.path.dirname(os.path.abspath(__file__))]

import a2a_min  # noqa: E402
import a2a_store  # noqa: E402
from harness import scenario_agent  # noqa: E402

# Where each thread is, on SIGUSR1 (to stderr): what a test that hangs reports.
faulthandler.register(signal.SIGUSR1, all_threads=True)
LEASE_TTL = float(os.environ.get("A2A_LEASE_TTL", "30"))
GRACE = float(os.environ.get("A2A_GRACE", "10"))


def note(ctx, what, **more):
    """One line in A2A_AGENT_LOG: which process did what for which task, when."""
    path = os.environ.get("A2A_AGENT_LOG")
    if path:
        line = json.dumps({"pid": os.getpid(), "task": ctx.task_id, "text": ctx.text,
                           "what": what, "at": time.time(), "trace": ctx.trace.trace_id,
                           **more}) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())         # one write, O_APPEND: lines never interleave
        finally:
            os.close(fd)


def agent(ctx):
    note(ctx, "start")
    text = ctx.text
    try:
        if text.startswith("count"):            # countN:D
            steps, _, pause = text[5:].partition(":")
            yield a2a_min.status_update("TASK_STATE_WORKING")
            for i in range(int(steps)):
                if ctx.cancelled.wait(float(pause or 0.1)):
                    note(ctx, "woke", cancelled=True)
                    return
                yield f"{i} "
        elif text.startswith("slow"):           # as scenario_agent's, noting when it wakes
            yield a2a_min.status_update("TASK_STATE_WORKING")
            cancelled = ctx.cancelled.wait(float(text[4:] or 5))
            note(ctx, "woke", cancelled=cancelled)
            yield "finished slowly"
        else:
            yield from scenario_agent(ctx)
    finally:
        note(ctx, "end", cancelled=ctx.cancelled.is_set())


class PidServer(a2a_min.Server):
    """Answers carry X-Pid (the threaded and WSGI hosts; ASGI: see asgi)."""

    def handle_http(self, *args, **kw):
        response = super().handle_http(*args, **kw)
        response.headers = list(response.headers) + [("X-Pid", str(os.getpid()))]
        return response


def make_server():
    # The lease lasts as long as the store says (it writes the leases, and the
    # Server renews them every third of that).
    store = a2a_store.open_store(os.environ["A2A_STORE"], lease_ttl=LEASE_TTL)
    return PidServer(agent, name="Shared store test agent", store=store,
                     push_notifications=True, push_allow=["127.0.0.0/8"], push_retries=0,
                     keepalive_interval=2)


def _asgi_with_pid(app):
    async def with_pid(scope, receive, send):
        async def send_with_pid(message):
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0] != b"x-pid"]
                message = {**message, "headers": headers + [(b"x-pid", str(os.getpid()).encode())]}
            await send(message)
        await app(scope, receive, send_with_pid)
    return with_pid


if os.environ.get("A2A_STORE"):
    server = make_server()
    wsgi = a2a_min.wsgi_app(server)
    asgi = _asgi_with_pid(a2a_min.asgi_app(server, grace=GRACE))


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    a2a_min.serve(server, "127.0.0.1", args.port, grace=GRACE, workers=args.workers)


if __name__ == "__main__":
    main()


_on_lambda = []


def on_lambda(event, context):
    """The same Server as an AWS Lambda handler (examples/lambda_local.py
    --handler shared_app:on_lambda), made on the first invocation."""
    if not _on_lambda:
        _on_lambda.append(a2a_min.lambda_handler(server))
    return _on_lambda[0](event, context)
