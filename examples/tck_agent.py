"""The conformance kit's scenario agent, served by a2a_min.

The official A2A conformance kit (a2aproject/a2a-tck) steers the agent under
test through the messageId of the user's message: ``tck-<scenario>-<run id>``.
This agent implements every scenario, so the kit can be run against this
server:

    python examples/tck_agent.py --port 9999 [--grpc-port 9998] [--server asyncio]
    ./run_tck.py --sut-host http://127.0.0.1:9999      # in the kit's checkout

With --grpc-port (and the grpc extra installed) the agent also serves gRPC,
and the card lists all three bindings. The same agent runs under the other
hosts, for the kit to check each of them:

    gunicorn -k gthread --threads 32 -b 127.0.0.1:9999 examples.tck_agent:wsgi
    uvicorn --port 9999 examples.tck_agent:asgi
    python examples/lambda_local.py 9999 --handler tck_agent:handler

See CONFORMANCE.md for the whole procedure.
"""

import argparse
import logging
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402


def open_store(location):
    """The store named by --store or A2A_STORE (a2a_store.py); None: in memory."""
    if not location:
        return None
    import a2a_store
    return a2a_store.open_store(location)
from a2a_min import artifact_update, file_part, data_part, status_update  # noqa: E402

WORKING, COMPLETED = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
FILE = file_part(raw=b"Generated file content", filename="output.txt", media_type="text/plain")
FILE_URL = file_part(url="https://example.com/output.txt", filename="output.txt",
                     media_type="text/plain")


def streamed(text):
    """WORKING, one text artifact, COMPLETED."""
    return [status_update(WORKING), artifact_update(text), status_update(COMPLETED)]


def slow_stream():
    yield status_update(WORKING)
    time.sleep(4)
    yield status_update(COMPLETED)


def reject():
    raise a2a_min.A2AError("rejected")


REQUIRED_EXTENSION = "urn:a2a:tck:required-extension"


# messageId prefix -> what the agent does. Longest prefixes are tried first.
SCENARIOS = {
    "tck-complete-task": lambda: [status_update(COMPLETED, "Hello from TCK")],
    "tck-input-required": lambda: [status_update("TASK_STATE_INPUT_REQUIRED",
                                                 "Please provide more input")],
    "tck-artifact-text": lambda: [artifact_update("Generated text content"),
                                  status_update(COMPLETED)],
    "tck-artifact-file": lambda: [artifact_update(FILE), status_update(COMPLETED)],
    "tck-artifact-file-url": lambda: [artifact_update(FILE_URL), status_update(COMPLETED)],
    "tck-artifact-data": lambda: [artifact_update(data_part({"key": "value", "count": 42})),
                                  status_update(COMPLETED)],
    "tck-message-response": lambda: [a2a_min.agent_message("Direct message response")],
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
_BY_LENGTH = sorted(SCENARIOS, key=len, reverse=True)


def tck_agent(ctx):
    message_id = ctx.message["messageId"]
    if message_id.startswith("tck-cap-ext"):
        # The kit's CORE-CAP-004: this interaction uses the required extension,
        # so the agent asks for it (specification section 3.3.2).
        ctx.require_extension(REQUIRED_EXTENSION)
    for prefix in _BY_LENGTH:
        if message_id.startswith(prefix):
            yield from SCENARIOS[prefix]()
            return
    yield status_update(COMPLETED, "Hello from TCK")   # anything else: complete


def make_server(**options):
    """Every capability on: streaming, push notifications (webhooks to this
    machine allowed: the kit's receiver listens on loopback), the extended card,
    and the kit's extension declared required."""
    return a2a_min.Server(
        tck_agent, name="a2a_min TCK agent",
        description="Implements the scenarios of the A2A conformance kit.",
        skills=[{"id": "tck", "name": "TCK scenarios", "tags": ["tck"],
                 "description": "Behaviour chosen by the messageId prefix."}],
        push_notifications=True, push_allow=["localhost", "127.0.0.0/8", "::1"],
        store=options.pop("store", None) or open_store(os.environ.get("A2A_STORE")),
        extended_card={"description": "The extended card of the a2a_min TCK agent."},
        extensions=[{"uri": REQUIRED_EXTENSION, "required": True,
                     "description": "Required by the conformance kit's extension tests."}],
        **options)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9999)
    parser.add_argument("--grpc-port", type=int, help="also serve gRPC on this port")
    parser.add_argument("--server", choices=("threads", "asyncio"), default="threads")
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
    logging.basicConfig(level=logging.WARNING)
    server = make_server(required_extensions=[REQUIRED_EXTENSION] if args.strict_extension else (),
                         store=open_store(args.store), compat=args.compat)
    if args.workers > 1 and (args.grpc_port is not None or args.server != "threads"):
        parser.error("--workers runs the threaded server only, without --grpc-port")
    if args.grpc_port is not None:
        import a2a_grpc
        grpc_server, port = a2a_grpc.create_server(server, f"{args.host}:{args.grpc_port}")
        grpc_server.start()
        print(f"TCK agent gRPC on {args.host}:{port}", flush=True)
    print(f"TCK agent on http://{args.host}:{args.port}/ ({args.server})", flush=True)
    if args.server == "asyncio":
        import asyncio
        asyncio.run(a2a_min.serve_asyncio(server, args.host, args.port))
    else:
        a2a_min.serve(server, args.host, args.port, workers=args.workers)


# The agent for other hosts (see the top of this file).
server = make_server()
wsgi = a2a_min.wsgi_app(server)
asgi = a2a_min.asgi_app(server)
handler = a2a_min.lambda_handler(server)

if __name__ == "__main__":
    main()
