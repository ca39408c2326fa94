"""Latency from a commit in one process to the event reaching a stream in another.

Two a2a_min servers (threaded) on two ports share one SQLite file (or, with
--postgres, one PostgreSQL database that the script starts, as the tests do,
from tests/postgres_server.py; its streams are woken by NOTIFY). A task runs
on the first: its agent commits an artifact every ``--interval`` seconds, each
holding the wall-clock time it was made. A SubscribeToTask stream on the second
server reads the events from the store; for each one the delay is the time it
arrived minus the time in it. Prints p50, p90, p99 and the maximum.

With --load N, N senders in a process of their own keep sending SendMessage
meanwhile (one keep-alive connection each, to the two servers in turn), so
both servers and the store are busy while the events travel; the line then
also says how many SendMessage calls a second they got answered. --nice 19
runs those senders at the lowest priority: on a machine of few cores they
would otherwise take a core from the servers and the database, which real
clients, on other machines, do not (what is then measured is the
scheduler's queue: five busy processes on two cores).

    python benchmarks/cross_process.py [--events 500] [--interval 0.01] [--poll 0.02]
    python benchmarks/cross_process.py --postgres [--load 16 [--nice 19]]

Numbers only: nothing here passes or fails. The delay is bounded by the
watching thread's poll interval (store_poll), which --poll sets.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SERVER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import a2a_min
import a2a_store

def agent(ctx):
    if ctx.text == "ping":             # the load's calls: answered at once
        yield a2a_min.agent_message("pong")
        return
    count, interval = (float(x) for x in ctx.text.split())
    time.sleep(1.0)                    # the subscriber connects meanwhile
    for i in range(int(count)):
        yield a2a_min.artifact_update(f"{time.time():.6f}", artifact_id=f"a{i}")
        time.sleep(interval)

server = a2a_min.Server(agent, store=a2a_store.open_store(sys.argv[2],
                                                         store_poll=float(sys.argv[4])))
a2a_min.serve(server, "127.0.0.1", int(sys.argv[3]))
"""

LOAD = r"""
import http.client, json, os, sys, threading, time
ports, senders = [int(p) for p in sys.argv[1].split(",")], int(sys.argv[2])
os.nice(int(sys.argv[3]))
def body():           # (a messageId of its own each: a repeated one would run nothing)
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": os.urandom(8).hex(), "role": "ROLE_USER", "parts": [{"text": "ping"}]}}})
headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
answered = [0] * senders

def send(i):
    conn = http.client.HTTPConnection("127.0.0.1", ports[i % len(ports)])
    while True:
        conn.request("POST", "/", body(), headers)
        response = conn.getresponse()
        response.read()
        assert response.status == 200
        answered[i] += 1

for i in range(senders):
    threading.Thread(target=send, args=(i,), daemon=True).start()
began = time.monotonic()
sys.stdin.read()                       # until the benchmark closes it
print(f"{sum(answered) / (time.monotonic() - began):.0f}", flush=True)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rpc(port, method, params, stream=False):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: "
                 b"application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(body), body))
    return sock


def wait_for(port):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no server on {port}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--interval", type=float, default=0.01)
    parser.add_argument("--poll", type=float, default=0.01)
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="N senders keep both servers busy meanwhile (default: none)")
    parser.add_argument("--nice", type=int, default=0,
                        help="the senders' niceness (19: the lowest priority; default 0)")
    parser.add_argument("--postgres", action="store_true",
                        help="share a PostgreSQL database (started here) instead of SQLite")
    args = parser.parse_args()
    database = None
    if args.postgres:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from postgres_server import PostgresServer
        database = PostgresServer(fsync=True)
        path = database.url
    else:
        path = os.path.join(tempfile.mkdtemp(), "tasks.db")
    ports = [free_port(), free_port()]
    load = None
    procs = [subprocess.Popen([sys.executable, "-c", SERVER, ROOT, path, str(p), str(args.poll)])
             for p in ports]
    try:
        for port in ports:
            wait_for(port)
        load = None
        if args.load:
            load = subprocess.Popen([sys.executable, "-c", LOAD, ",".join(map(str, ports)),
                                     str(args.load), str(args.nice)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)
            time.sleep(1.0)                 # (its senders under way)
        sock = rpc(ports[0], "SendMessage", {
            "message": {"messageId": f"m{os.getpid()}-{time.monotonic_ns()}", "role": "ROLE_USER",
                        "parts": [{"text": f"{args.events} {args.interval}"}]},
            "configuration": {"returnImmediately": True}})
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        task_id = json.loads(answer.split(b"\r\n\r\n", 1)[1])["result"]["task"]["id"]
        stream = rpc(ports[1], "SubscribeToTask", {"id": task_id}).makefile("rb")
        delays = []
        for line in stream:
            if not line.startswith(b"data:"):
                continue
            arrived = time.time()
            result = json.loads(line[5:]).get("result", {})
            update = result.get("artifactUpdate")
            if update:
                delays.append((arrived - float(update["artifact"]["parts"][0]["text"])) * 1000)
            state = (result.get("statusUpdate") or result.get("task") or {}).get("status", {})
            if state.get("state") == "TASK_STATE_COMPLETED":
                break
        rate = ""
        if load is not None:
            rate = (f", meanwhile {load.communicate('')[0].strip()} SendMessage/s from {args.load} "
                    f"senders{' at nice %d' % args.nice if args.nice else ''}")
        delays.sort()
        q = statistics.quantiles(delays, n=100)
        print(f"commit in process A -> event on a stream in process B, {len(delays)} events, "
              f"{'PostgreSQL' if database else 'SQLite'}, "
              f"store_poll {args.poll * 1000:g} ms: p50 {q[49]:.1f} ms, p90 {q[89]:.1f} ms, "
              f"p99 {q[98]:.1f} ms, max {delays[-1]:.1f} ms{rate}")
    finally:
        if load is not None and load.poll() is None:
            load.kill()
        for proc in procs:
            proc.terminate()
            proc.wait(10)
        if database is not None:
            database.stop()


if __name__ == "__main__":
    main()
