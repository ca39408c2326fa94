"""How late a stream shows what the agent does: time to the first event, and
the delay of each output, under a slow agent (section 3.1.2: a stream is for
seeing what happens as it happens; throughput is tokens.py's business).

The agent is silent for --silent seconds, then yields --outputs outputs, one
every --pause seconds, each carrying the time.monotonic() at which it was
made (CLOCK_MONOTONIC is one clock for every process of the machine). The
client sends SendStreamingMessage and notes when each event arrives:

- first event: from the request sent to the first event read (the Task, or
  the first output, whichever the server sends first);
- output delay: from an output made to its event read.

Agents: a sync generator, an async generator (the asyncio server runs it on
its loop, the threaded one on the server's own loop) and serve --exec with a
program printing a line each time. Servers: threads and asyncio, each in a
process of its own, pinned to core 0 when taskset is there (the client on
core 1). --before PATH runs the same against another checkout, in turn.

    python3 benchmarks/latency.py                      # this checkout
    python3 benchmarks/latency.py --before ../main-at-5f8f68d --rounds 3

A benchmark reports numbers; it never fails a build.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# The server: a2a_min from ROOT, one agent, one host, on a port it prints.
SERVER = r'''
import asyncio, os, sys, time
sys.path.insert(0, sys.argv[1])
import a2a_min
kind, host, silent, outputs, pause = sys.argv[2], sys.argv[3], *map(float, sys.argv[4:7])
outputs = int(outputs)

def sync_agent(ctx):
    time.sleep(silent)
    for i in range(outputs):
        yield "%.9f " % time.monotonic()
        time.sleep(pause)

async def async_agent(ctx):
    await asyncio.sleep(silent)
    for i in range(outputs):
        yield "%.9f " % time.monotonic()
        await asyncio.sleep(pause)

if kind == "exec":
    import a2a_cli
    program = ("import time\ntime.sleep(%r)\nfor i in range(%d):\n"
               "    print('%%.9f' %% time.monotonic(), flush=True); time.sleep(%r)\n"
               % (silent, outputs, pause))
    agent = a2a_cli.exec_agent([sys.executable, "-c", program])
else:
    agent = {"sync": sync_agent, "async": async_agent}[kind]
server = a2a_min.Server(agent)

def ready(listener):
    sockets = getattr(listener, "sockets", None)
    address = sockets[0].getsockname() if sockets else listener.server_address
    print(address[1], flush=True)

if host == "asyncio":
    asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", 0, on_ready=ready))
else:
    a2a_min.serve(server, "127.0.0.1", 0, on_ready=ready)
'''


def start(root, kind, host, silent, outputs, pause):
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    proc = subprocess.Popen(pin + [sys.executable, "-c", SERVER, root, kind, host,
                                   str(silent), str(outputs), str(pause)],
                            stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


def stream(port):
    """(seconds to the first event, [delay of each output, seconds])."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": f"m{time.monotonic_ns()}", "role": "ROLE_USER",    # (each its own)
                    "parts": [{"text": "go"}]}}})
    request = (f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nA2A-Version: 1.0\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
               f"Connection: close\r\n\r\n{body}").encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(120)
    sent = time.monotonic()
    sock.sendall(request)
    first, delays, buffer = None, [], b""
    while True:
        data = sock.recv(65536)
        now = time.monotonic()
        if not data:
            break
        buffer += data
        for line in buffer.split(b"\n")[:-1]:
            if not line.startswith(b"data:"):
                continue
            event = json.loads(line[5:])["result"]
            if first is None:
                first = now - sent
            for part in event.get("artifactUpdate", {}).get("artifact", {}).get("parts", ()):
                if part.get("text", "").strip():
                    delays.append(now - float(part["text"]))
        buffer = buffer.rsplit(b"\n", 1)[-1]
        if b"TASK_STATE_COMPLETED" in data or b"TASK_STATE_FAILED" in data:
            break
    sock.close()
    return first, delays


def measure(root, kind, host, args):
    proc, port = start(root, kind, host, args.silent, args.outputs, args.pause)
    try:
        return stream(port)
    finally:
        proc.terminate()
        proc.wait(10)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="another checkout, measured in turn with this one")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--silent", type=float, default=1.0, help="seconds before the first output")
    parser.add_argument("--outputs", type=int, default=5)
    parser.add_argument("--pause", type=float, default=0.2, help="seconds between outputs")
    parser.add_argument("--host", default="threads,asyncio")
    parser.add_argument("--agent", default="sync,async,exec")
    args = parser.parse_args(argv)
    if shutil.which("taskset"):
        os.sched_setaffinity(0, {1})
    roots = {"now": os.path.dirname(HERE)}
    if args.before:
        roots["before"] = os.path.abspath(args.before)
    results = {}
    for _ in range(args.rounds):
        for host in args.host.split(","):
            for kind in args.agent.split(","):
                for name, root in roots.items():
                    first, delays = measure(root, kind, host, args)
                    got = results.setdefault((host, kind, name), ([], []))
                    got[0].append(first)
                    got[1].extend(delays)
    print(f"agent silent {args.silent:g} s, then {args.outputs} outputs {args.pause:g} s apart; "
          f"{args.rounds} rounds; milliseconds")
    print("| server | agent | checkout | first event | output delay median | p90 | max |")
    print("|---|---|---|---|---|---|---|")
    for (host, kind, name), (firsts, delays) in sorted(results.items()):
        ms = sorted(1000 * d for d in delays)
        p90 = ms[int(0.9 * (len(ms) - 1))] if ms else float("nan")
        print(f"| {host} | {kind} | {name} | {1000 * statistics.median(firsts):.1f} | "
              f"{statistics.median(ms) if ms else float('nan'):.2f} | {p90:.2f} | "
              f"{max(ms) if ms else float('nan'):.2f} |")


if __name__ == "__main__":
    main()
