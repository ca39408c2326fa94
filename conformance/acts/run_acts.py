#!/usr/bin/env python3
"""ACTS runner: runs the A2A Conformance Test Specification corpus against a
server over JSON-RPC, HTTP+JSON and gRPC.

    run_acts.py --corpus PATH/TO/A2A/tests/acts --sut http://127.0.0.1:9999 \\
                --transport jsonrpc|http_json|grpc|all [--grpc-target 127.0.0.1:9998]
                [--auth-token T] [--insufficient-token T] [--other-auth-token T]
                [--level must] [--only ID[,ID]] [--report out-{transport}.json] [-v]
"""

import argparse
import datetime
import json
import os
import platform
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from acts.runner import LEVELS, Runner, load, summarize  # noqa: E402
from acts.wire import Binding, Http  # noqa: E402

TRANSPORTS = {"jsonrpc": "jsonrpc", "http_json": "rest", "rest": "rest", "grpc": "grpc"}
ALL = ["jsonrpc", "http_json", "grpc"]


def fetch_card(http, token=None):
    headers = {"Accept": "application/json", "A2A-Version": "1.0"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    result = http.request("GET", "/.well-known/agent-card.json", headers)
    if result.http_status != 200 or not isinstance(result.body, dict):
        print(f"warning: agent card unavailable (HTTP {result.http_status}); "
              "capability preconditions will be judged against an empty card", file=sys.stderr)
        return {}
    return result.body


def grpc_target(args, card):
    """--grpc-target, else the card's GRPC interface (host:port, or a URL) with
    an unspecified or loopback host read as the --sut host."""
    if args.grpc_target:
        return args.grpc_target
    for iface in card.get("supportedInterfaces") or []:
        if isinstance(iface, dict) and iface.get("protocolBinding") == "GRPC":
            url = str(iface.get("url", ""))
            parts = urllib.parse.urlsplit(url if "://" in url else "grpc://" + url)
            host = parts.hostname
            if host in (None, "0.0.0.0", "::", "localhost"):
                host = urllib.parse.urlsplit(args.sut).hostname
            return f"{host}:{parts.port}"
    raise SystemExit("gRPC: the card lists no GRPC interface; give --grpc-target HOST:PORT")


def make_binding(args, transport, http, card, version):
    if transport != "grpc":
        return Binding(http, TRANSPORTS[transport], version=version, auth_token=args.auth_token)
    sys.path.insert(0, args.repo)
    try:
        import a2a_min_pb2
    except ImportError as exc:
        raise SystemExit(f"gRPC needs the repo's a2a_min_pb2.py (--repo {args.repo}), grpcio "
                         f"and protobuf: {exc}")
    from acts.wire import GrpcBinding
    target = grpc_target(args, card)
    return GrpcBinding(http, target, version=version, auth_token=args.auth_token,
                       pb2=a2a_min_pb2, timeout=args.timeout,
                       required_defaults=not args.grpc_plain_protojson)


def run_transport(tests, args, transport, webhook):
    http = Http(args.sut, timeout=args.timeout)
    card = fetch_card(http, args.auth_token)
    spec_version = str(tests[0].document.get("spec_version", "1.0")) if tests else "1.0"
    binding = make_binding(args, transport, http, card, spec_version)
    client = None
    if transport == args.client_transport and not args.no_client_tests:
        from acts.client import ClientHarness
        client = ClientHarness(args.repo, keep_id=args.client_keep_id)
    runner = Runner(binding, card, args.sut, hoist=not args.no_hoist,
                    stream_timeout=args.stream_timeout,
                    fill_raw_message_id=args.fill_raw_message_id,
                    message_id_from_text=args.message_id_from_text,
                    client=client, webhook=webhook, webhook_wait=args.webhook_wait,
                    infer_streaming=args.infer_streaming_precondition,
                    auth_raw=args.auth_raw, hoist_raw=args.hoist_raw,
                    auth_precondition=args.auth_precondition,
                    tokens={"auth": args.auth_token, "insufficient": args.insufficient_token,
                            "other": args.other_auth_token})
    runner.extra_vars = dict(v.split("=", 1) for v in args.var)
    where = f" (gRPC {binding.target})" if transport == "grpc" else ""
    print(f"== ACTS against {args.sut}{where} over {transport} ({len(tests)} test(s)) ==")
    outcomes = []
    started = time.monotonic()
    try:
        for test in tests:
            outcome = runner.run(test)
            outcomes.append(outcome)
            tag = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP", "error": "ERROR"}[
                outcome.result]
            line = f"{tag:5} {outcome.test.level or '?':6} {test.id:18}"
            if outcome.result == "pass":
                line += f" {test.spec.get('name', '')}"
            else:
                line += f" {outcome.message}"
            print(line, flush=True)
            if args.verbose and outcome.notes:
                for note in outcome.notes:
                    print(f"{'':32}note: {note}")
    finally:
        binding.close()
        if client is not None:
            client.close()
    duration = int((time.monotonic() - started) * 1000)
    summary = summarize(outcomes)
    print(f"-- summary ({transport}, {duration / 1000:.1f}s) --")
    for level in LEVELS:
        row = summary[level]
        if row["total"]:
            print(f"{level.upper():6}: {row['passed']}/{row['total'] - row['skipped']} passed "
                  f"({row['failed']} failed, {row['errors']} errors, {row['skipped']} skipped)")
    return outcomes, summary, duration


def report(outcomes, summary, duration, transport, doc):
    suites = {}
    for o in outcomes:
        s = suites.setdefault(o.test.suite.get("id"), {"id": o.test.suite.get("id"),
                                                       "name": o.test.suite.get("name"),
                                                       "tests": []})
        entry = {"id": o.test.id, "name": o.test.spec.get("name"), "level": o.test.level,
                 "result": o.result, "duration_ms": o.duration_ms}
        if o.result == "skip":
            entry["skip_reason"] = o.message
        elif o.result in ("fail", "error"):
            failure = {"message": o.message}
            if o.step_id:
                failure["step_id"] = o.step_id
            if o.failure is not None:
                failure["assertion_path"] = o.failure.path
                if o.failure.expected is not None:
                    failure["expected"] = json.dumps(o.failure.expected, default=str)
                failure["actual"] = repr(o.failure.actual)
            entry["failure"] = failure
        if o.notes:
            entry["notes"] = o.notes
        s["tests"].append(entry)
    totals = {k: sum(summary[lvl][k] for lvl in summary) for k in
              ("total", "passed", "failed", "skipped", "errors")}
    return {
        "acts_version": str(doc.get("acts_version", "1.0")),
        "spec_version": str(doc.get("spec_version", "1.0")),
        "generated_at": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ"),
        "sdk": {"name": "a2a_min", "version": "unknown", "language": "python"},
        "transport": TRANSPORTS[transport],
        "environment": {"os": platform.platform(), "runtime": platform.python_version(),
                        "runner": "a2a_min conformance/acts"},
        "summary": {**totals, "duration_ms": duration,
                    "by_level": {lvl: summary[lvl] for lvl in LEVELS}},
        "suites": list(suites.values()),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sut", required=True, help="base URL of the server under test")
    p.add_argument("--corpus", nargs="+", required=True,
                   help="the ACTS corpus: a2aproject/A2A's tests/acts directory (branch "
                        "conformance-spec), or .acts.yaml files")
    p.add_argument("--transport", choices=("jsonrpc", "http_json", "rest", "grpc", "both",
                                           "all"), default="jsonrpc",
                   help="both = jsonrpc,http_json; all = jsonrpc,http_json,grpc")
    p.add_argument("--grpc-target", help="HOST:PORT of the gRPC server (default: the card's "
                                         "GRPC interface)")
    p.add_argument("--repo", default=os.path.normpath(os.path.join(HERE, "..", "..")),
                   help="the a2a_min checkout (a2a_min_pb2.py, a2a_client.py); default: the "
                        "one this runner is in")
    p.add_argument("--level", choices=LEVELS, action="append",
                   help="run only tests of this level (repeatable)")
    p.add_argument("--only", action="append", default=[],
                   help="run only these test ids (comma separated, repeatable)")
    p.add_argument("--report", help="write the ACTS JSON report (section 13) here; "
                                    "{transport} is replaced")
    p.add_argument("--auth-token", help="sent as Authorization: Bearer TOKEN (gRPC metadata "
                                        "authorization) on every abstract operation")
    p.add_argument("--insufficient-token", help="valid but insufficient credentials: the "
                                                "variable insufficientAuthToken")
    p.add_argument("--other-auth-token", help="another user's token: the runner creates a "
                                              "task with it for the variable otherUserTaskId")
    p.add_argument("--webhook-wait", type=float, default=20.0,
                   help="seconds to wait for push deliveries in webhook tests")
    p.add_argument("--client-transport", default="jsonrpc",
                   help="the pass that runs the client tests (section 10) through "
                        "a2a_client.py (default jsonrpc)")
    p.add_argument("--no-client-tests", action="store_true")
    p.add_argument("--client-keep-id", action="store_true",
                   help="serve a client test's JSON-RPC payload with its own id, not the "
                        "request's")
    p.add_argument("--grpc-plain-protojson", action="store_true",
                   help="gRPC answers as MessageToDict gives them, without the REQUIRED "
                        "fields that proto3 cannot tell from absent at their default")
    p.add_argument("--infer-streaming-precondition", action="store_true",
                   help="skip a test that reads a stream but lacks preconditions.capabilities."
                        "streaming when the card does not declare streaming (the corpus's "
                        "streaming tests omit it; spec 3.3.4 makes such calls fail)")
    p.add_argument("--auth-raw", action="store_true",
                   help="send --auth-token on raw wire steps that write no Authorization, "
                        "except in tests tagged auth (the corpus's raw steps cannot name the "
                        "runner's credentials, so they fail against a server that requires them)")
    p.add_argument("--hoist-raw", action="store_true",
                   help="move params.taskId/contextId of a raw JSON-RPC body into its message "
                        "(CORE-ERR-008 puts taskId beside the message)")
    p.add_argument("--auth-precondition", choices=("schemes", "required"), default="schemes",
                   help="when `capabilities: authentication: true` holds: the card lists "
                        "securitySchemes (default), or also requires one (securityRequirements)")
    p.add_argument("--no-hoist", action="store_true",
                   help="send params.taskId/contextId as given instead of moving them into "
                        "the message")
    p.add_argument("--fill-raw-message-id", action="store_true",
                   help="add a messageId to raw-step messages that lack one (the corpus's "
                        "raw bodies omit it, A2A requires it)")
    p.add_argument("--message-id-from-text", action="store_true",
                   help="DIAGNOSTIC, not ACTS: prefix generated messageIds with the tck-* word "
                        "of the message text, for servers that steer by messageId")
    p.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="a runner-provided variable")
    p.add_argument("--timeout", type=float, default=30.0, help="request timeout (s)")
    p.add_argument("--stream-timeout", type=float, default=30.0,
                   help="default time to wait for a stream to close (s)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    args.sut = args.sut.rstrip("/")

    tests = load(args.corpus)
    if args.level:
        tests = [t for t in tests if t.level in args.level]
    only = {i.strip() for chunk in args.only for i in chunk.split(",") if i.strip()}
    if only:
        tests = [t for t in tests if t.id in only]
        unknown = only - {t.id for t in tests}
        if unknown:
            print(f"warning: no such test(s): {', '.join(sorted(unknown))}", file=sys.stderr)
    transports = {"both": ALL[:2], "all": ALL}.get(args.transport, [args.transport])
    from acts.webhook import Receiver
    webhook = Receiver()
    failed_must = 0
    totals = {}
    try:
        for transport in transports:
            outcomes, summary, duration = run_transport(tests, args, transport, webhook)
            totals[transport] = summary
            failed_must += summary["must"]["failed"] + summary["must"]["errors"]
            if args.report:
                doc = tests[0].document if tests else {}
                path = args.report.replace("{transport}", transport)
                with open(path, "w") as f:
                    json.dump(report(outcomes, summary, duration, transport, doc), f, indent=2)
            print()
    finally:
        webhook.close()
    if len(transports) > 1:
        print("== per transport: passed/failed/errors/skipped (of total) ==")
        for transport, summary in totals.items():
            cells = []
            for level in LEVELS:
                r = summary[level]
                cells.append(f"{level.upper()} {r['passed']}/{r['failed']}/{r['errors']}/"
                             f"{r['skipped']} ({r['total']})")
            print(f"{transport:10} " + "  ".join(cells))
    return 1 if failed_must else 0


if __name__ == "__main__":
    sys.exit(main())
