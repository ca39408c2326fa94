"""The conformance suites' scenario agent, served by a2a_min.

Two suites steer the agent under test by what a message says. ACTS, the
specification's own suite (a2aproject/A2A, branch conformance-spec), puts a
command at the start of the first text part: ``tck-complete-task ...``
(ACTS section 11.2). The older kit (a2aproject/a2a-tck) puts one at the start
of the messageId: ``tck-<scenario>-<run id>``. This agent answers both: a
first text part that starts with ``tck-`` chooses from BEHAVIORS, else the
messageId chooses from KIT_SCENARIOS.

ACTS runs its suite three ways, and the kit one more; --run chooses:

    full   every capability on: streaming, push notifications, the extended
           card; callers without credentials are served, the extended card
           needs a token (section 13.3)
    bare   push notifications, streaming and the extended card off
    auth   as full, but every operation needs a token
    tck    as full, for the older kit, which sends no credentials: every
           caller counts as authenticated ("tck")

The tokens (Authorization: Bearer <token>): acts-valid-token (a user),
acts-other-token (another user), acts-insufficient-token (known, but refused
with 403 / PERMISSION_DENIED everywhere); none at all gets 401 where a token
is needed.

    python examples/tck_agent.py --port 9999 --grpc-port 9998 --run full
    python examples/tck_agent.py --behaviors         # what it implements (ACTS 11.1)

With --grpc-port (and the grpc extra installed) the agent also serves gRPC,
and the card lists all three bindings. The same agent runs under the other
hosts (the run from $TCK_RUN; full when unset):

    gunicorn -k gthread --threads 32 -b 127.0.0.1:9999 examples.tck_agent:wsgi
    uvicorn --port 9999 examples.tck_agent:asgi
    python examples/lambda_local.py 9999 --handler tck_agent:handler

See CONFORMANCE.md for both suites' whole procedure.
"""

import argparse
import json
import logging
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402
from a2a_min import agent_message, artifact_update, data_part, file_part, status_update  # noqa: E402

WORKING, COMPLETED = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
FILE = file_part(raw=b"Generated file content", filename="output.txt", media_type="text/plain")
FILE_URL = file_part(url="https://example.com/output.txt", filename="output.txt",
                     media_type="text/plain")
REQUIRED_EXTENSION = "urn:a2a:tck:required-extension"
LONG_RUNNING_SECONDS = 2


def open_store(location):
    """The store named by --store or A2A_STORE (a2a_store.py); None: in memory."""
    if not location:
        return None
    import a2a_store
    return a2a_store.open_store(location)


def streamed(text):
    """WORKING, one text artifact, COMPLETED."""
    return [status_update(WORKING), artifact_update(text), status_update(COMPLETED)]


def chunked():
    """One artifact over three events, the last marked lastChunk."""
    return [status_update(WORKING),
            artifact_update("chunk-1 ", artifact_id="chunked"),
            artifact_update("chunk-2 ", artifact_id="chunked", append=True),
            artifact_update("chunk-3", artifact_id="chunked", append=True, last_chunk=True),
            status_update(COMPLETED)]


def long_running(ctx):
    """WORKING at once, then after a while an artifact and COMPLETED."""
    yield status_update(WORKING, "Working on it")
    if ctx.cancelled.wait(LONG_RUNNING_SECONDS):
        return                               # (canceled meanwhile: the server says so)
    yield artifact_update("Long-running result")
    yield status_update(COMPLETED, "Done")


def until_canceled(ctx):
    """WORKING, until the task is canceled (or ten minutes pass)."""
    yield status_update(WORKING, "Working until canceled")
    ctx.cancelled.wait(600)


def multi_turn(ctx):
    """INPUT_REQUIRED until the user's text says done."""
    if ctx.task is not None and "done" in ctx.text.lower():
        yield status_update(COMPLETED, "Conversation complete")
    else:
        yield status_update("TASK_STATE_INPUT_REQUIRED", "Say more, or 'done' to finish")


# ACTS section 11.2: the first text part's prefix -> (what it does, the agent).
BEHAVIORS = {
    "tck-complete-task": ("Complete the task with a text response message.",
                          lambda ctx: [status_update(COMPLETED, "Hello from TCK")]),
    "tck-input-required": ("Return the task in TASK_STATE_INPUT_REQUIRED.",
                           lambda ctx: [status_update("TASK_STATE_INPUT_REQUIRED",
                                                      "Please provide more input")]),
    "tck-reject-task": ("Reject the task: TASK_STATE_REJECTED with a message.",
                        lambda ctx: [status_update("TASK_STATE_REJECTED",
                                                   "Rejected by the TCK agent")]),
    "tck-message-response": ("Answer with a Message, not a Task.",
                             lambda ctx: [agent_message("Direct message response")]),
    "tck-artifact-text": ("Complete with a text artifact.",
                          lambda ctx: [artifact_update("Generated text content"),
                                       status_update(COMPLETED)]),
    "tck-artifact-file": ("Complete with a file artifact (inline bytes).",
                          lambda ctx: [artifact_update(FILE), status_update(COMPLETED)]),
    "tck-artifact-file-url": ("Complete with a file URL artifact.",
                              lambda ctx: [artifact_update(FILE_URL), status_update(COMPLETED)]),
    "tck-artifact-data": ("Complete with a structured data artifact.",
                          lambda ctx: [artifact_update(data_part({"key": "value", "count": 42})),
                                       status_update(COMPLETED)]),
    "tck-long-running": (f"WORKING, then after {LONG_RUNNING_SECONDS} s an artifact and "
                         "COMPLETED.", long_running),
    "tck-multi-turn": ("INPUT_REQUIRED until a follow-up says done, then COMPLETED.",
                       multi_turn),
    "tck-cancel": ("Stay WORKING until canceled.", until_canceled),
    "tck-stream-basic": ("Stream: WORKING, a text artifact, COMPLETED.",
                         lambda ctx: streamed("Streamed content")),
    "tck-stream-chunked": ("Stream one artifact over several append/lastChunk events.",
                           lambda ctx: chunked()),
    "tck-task-failure": ("End in TASK_STATE_FAILED with a message.",
                         lambda ctx: [status_update("TASK_STATE_FAILED",
                                                    "The task failed, as asked")]),
    "tck-auth-required": ("Stop in TASK_STATE_AUTH_REQUIRED with a message.",
                          lambda ctx: [status_update("TASK_STATE_AUTH_REQUIRED",
                                                     "Authenticate to go on")]),
}


def slow_stream():
    yield status_update(WORKING)
    time.sleep(4)
    yield status_update(COMPLETED)


def reject():
    raise a2a_min.A2AError("rejected")


# The older kit: the messageId's prefix -> what the agent does.
KIT_SCENARIOS = {
    "tck-complete-task": lambda: [status_update(COMPLETED, "Hello from TCK")],
    "tck-input-required": lambda: [status_update("TASK_STATE_INPUT_REQUIRED",
                                                 "Please provide more input")],
    "tck-artifact-text": lambda: [artifact_update("Generated text content"),
                                  status_update(COMPLETED)],
    "tck-artifact-file": lambda: [artifact_update(FILE), status_update(COMPLETED)],
    "tck-artifact-file-url": lambda: [artifact_update(FILE_URL), status_update(COMPLETED)],
    "tck-artifact-data": lambda: [artifact_update(data_part({"key": "value", "count": 42})),
                                  status_update(COMPLETED)],
    "tck-message-response": lambda: [agent_message("Direct message response")],
    "tck-stream-001": lambda: streamed("Stream hello from TCK"),
    "tck-stream-002": lambda: [status_update(COMPLETED)],
    "tck-stream-003": lambda: streamed("Stream task lifecycle"),
    "tck-stream-ordering-001": lambda: streamed("Ordered output"),
    "tck-stream-artifact-text": lambda: streamed("Streamed text content"),
    "tck-stream-artifact-file": lambda: [status_update(WORKING), artifact_update(FILE),
                                         status_update(COMPLETED)],
    "tck-stream-artifact-chunked": lambda: [
        status_update(WORKING),
        artifact_update("chunk-1 ", artifact_id="chunked", append=True),
        artifact_update("chunk-2", artifact_id="chunked", append=True, last_chunk=True),
        status_update(COMPLETED)],
    "tck-reject-task": reject,
    "test-resubscribe-message-id": slow_stream,
}


def _longest_first(table):
    return sorted(table, key=len, reverse=True)


_BEHAVIOR_PREFIXES, _KIT_PREFIXES = _longest_first(BEHAVIORS), _longest_first(KIT_SCENARIOS)


def _first_text(message):
    return next((part["text"] for part in message.get("parts", ()) if "text" in part), "")


def tck_agent(ctx):
    # A follow-up in a task goes on with what the task's first message asked.
    first = ctx.task["history"][0] if ctx.task and ctx.task.get("history") else ctx.message
    text = _first_text(first)
    if text.startswith("tck-"):
        for prefix in _BEHAVIOR_PREFIXES:
            if text.startswith(prefix):
                yield from BEHAVIORS[prefix][1](ctx)
                return
    message_id = ctx.message["messageId"]
    if message_id.startswith("tck-cap-ext"):
        # The kit's CORE-CAP-004: this interaction uses the required extension,
        # so the agent asks for it (specification section 3.3.2).
        ctx.require_extension(REQUIRED_EXTENSION)
    for prefix in _KIT_PREFIXES:
        if message_id.startswith(prefix):
            yield from KIT_SCENARIOS[prefix]()
            return
    yield status_update(COMPLETED, "Hello from TCK")   # anything else: complete


def behaviors_document():
    """The SUT behaviors file of ACTS section 11.1 (JSON, which ACTS takes as YAML's equal)."""
    return {"acts_version": "1.0", "behaviors": [
        {"prefix": prefix, "description": description} for prefix, (description, _)
        in BEHAVIORS.items()]}


# -- authentication: the fixed test tokens ---------------------------------------

class PermissionDeniedError(a2a_min.A2AError):
    """A known caller who may not do this: HTTP 403, gRPC PERMISSION_DENIED
    (the specification gives JSON-RPC no code; -31403 beside a2a_min's -31401)."""
    code, grpc_status, http_status, reason = -31403, "PERMISSION_DENIED", 403, "PERMISSION_DENIED"


TOKENS = {"acts-valid-token": "acts-user", "acts-other-token": "acts-other",
          "acts-insufficient-token": "acts-insufficient"}
RUNS = ("full", "bare", "auth", "tck")


def authentication(run):
    """The authenticate hook of a run (None: nobody is asked)."""
    if run == "bare":
        return None
    if run == "tck":
        return lambda call: "tck"      # (the kit sends no credentials: all count as known)
    bearer = a2a_min.BearerAuth(TOKENS, anonymous=run == "full")

    def authenticate(call):
        principal = bearer(call)
        if principal == "acts-insufficient":
            raise PermissionDeniedError("this token may not use this agent: send "
                                        "'Authorization: Bearer acts-valid-token'")
        return principal
    authenticate.security_schemes, authenticate.anonymous = bearer.security_schemes, bearer.anonymous
    return authenticate


def make_server(run="full", **options):
    """The agent as ``run`` has it (see the top of this file): push
    notifications may reach this machine only (the suites' receivers listen on
    loopback), and the kit's extension is declared."""
    on = run != "bare"
    return a2a_min.Server(
        tck_agent, name="a2a_min TCK agent",
        description="Implements the scenarios of the A2A conformance suites (ACTS and a2a-tck).",
        skills=[{"id": "tck", "name": "TCK scenarios", "tags": ["tck"],
                 "description": "Behaviour chosen by the first text part's tck-* prefix "
                                "(ACTS) or the messageId's (a2a-tck)."}],
        streaming=on, push_notifications=on, push_allow=["localhost", "127.0.0.0/8", "::1"],
        store=options.pop("store", None) or open_store(os.environ.get("A2A_STORE")),
        extended_card={"description": "The extended card of the a2a_min TCK agent."} if on
        else None,
        authenticate=authentication(run),
        extensions=[{"uri": REQUIRED_EXTENSION, "required": True,
                     "description": "Required by the conformance kit's extension tests."}],
        **options)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--grpc-port", type=int, help="also serve gRPC on this port")
    parser.add_argument("--server", choices=("threads", "asyncio"), default="threads")
    parser.add_argument("--run", choices=RUNS, default=os.environ.get("TCK_RUN", "full"),
                        help="which capabilities and authentication (see the top of the file)")
    parser.add_argument("--behaviors", action="store_true",
                        help="print the ACTS behaviors this agent implements, and exit")
    parser.add_argument("--store", metavar="FILE|URL", help="an SQLite file, or a "
                        "postgresql:// URL, for the tasks (default: $A2A_STORE, else in memory)")
    parser.add_argument("--workers", type=int, default=1, help="processes (threads server, "
                        "with --store, without --grpc-port)")
    parser.add_argument("--compat", choices=("0.3",),
                        help="serve A2A 0.3 clients too (a2a_v03.py): the kit, a 1.0 client, "
                             "must see no difference")
    parser.add_argument("--strict-extension", action="store_true",
                        help="refuse every message that does not announce the required "
                             "extension (the kit's other tests then fail; see CONFORMANCE.md)")
    args = parser.parse_args(argv)
    if args.behaviors:
        print(json.dumps(behaviors_document(), indent=2))
        return
    logging.basicConfig(level=logging.WARNING)
    server = make_server(args.run, store=open_store(args.store), compat=args.compat,
                         required_extensions=[REQUIRED_EXTENSION] if args.strict_extension else ())
    if args.workers > 1 and (args.grpc_port is not None or args.server != "threads"):
        parser.error("--workers runs the threaded server only, without --grpc-port")
    if args.grpc_port is not None:
        import a2a_grpc
        grpc_server, port = a2a_grpc.create_server(server, f"{args.host}:{args.grpc_port}")
        grpc_server.start()
        print(f"TCK agent gRPC on {args.host}:{port}", flush=True)
    print(f"TCK agent ({args.run} run) on http://{args.host}:{args.port}/ ({args.server})",
          flush=True)
    if args.server == "asyncio":
        import asyncio
        asyncio.run(a2a_min.serve_asyncio(server, args.host, args.port))
    else:
        a2a_min.serve(server, args.host, args.port, workers=args.workers)


# The agent for other hosts (see the top of this file).
server = make_server(os.environ.get("TCK_RUN", "full"))
wsgi = a2a_min.wsgi_app(server)
asgi = a2a_min.asgi_app(server)
handler = a2a_min.lambda_handler(server)

if __name__ == "__main__":
    main()
