"""Side-by-side benchmark: a2a_min against the reference SDK (a2a-sdk on uvicorn).

Both servers run the same echo agent (one artifact echoing the text, then
COMPLETED). Method (see the project's BENCHMARKING notes): the server is pinned
to core 0 and the load generator (wrk) to core 1; rounds alternate A, B, A, B,
and the median of the per-round ratios is reported. Numbers only: nothing here
passes or fails.

Setup (once):
    apt-get install wrk
    python3 -m venv /tmp/sdk && /tmp/sdk/bin/pip install 'a2a-sdk[http-server]==1.3.0' uvicorn

Run:
    python3 benchmarks/run.py --sdk-python /tmp/sdk/bin/python [--rounds 3] [--seconds 4]
    python3 benchmarks/run.py --host asyncio --bare --sdk-python ... --only send --skip sse,memory

``--host asyncio`` runs a2a_min on its asyncio server (with an ``async def``
echo agent, as the SDK's executor is); ``--bare`` adds the ceiling: a bare
asyncio responder that only parses the request and builds a task
(benchmarks/bare_asyncio.py). Ratios are a2a_min's rate over each other's.
``--before DIR`` adds a2a_min as it is in another checkout (say, a
``git worktree add /tmp/before HEAD~3``), run the same way: the before/after
comparison every change to the core needs, in alternating rounds.
``--python`` picks the interpreter for a2a_min and the bare responder; give the
SDK a venv of the same Python, so that the versions' speeds do not count (on
3.12+ a short async turn ends inside the request: eager tasks):

    python3 benchmarks/run.py --host asyncio --bare --python python3.12 \
        --sdk-python /tmp/sdk312/bin/python --only send --skip sse,memory --rounds 5
"""

import argparse
import http.client
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SEND_LUA = r"""
counter = 0
request = function()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
    .. '{"messageId":"m' .. counter .. '-' .. math.random(1, 1e9)
    .. '","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
  return wrk.format("POST", "/", {["Content-Type"]="application/json",
                                  ["A2A-Version"]="1.0"}, body)
end
"""


REST_SEND_LUA = r"""
counter = 0
request = function()
  counter = counter + 1
  local body = '{"message":{"messageId":"r' .. counter .. '-' .. math.random(1, 1e9)
    .. '","role":"ROLE_USER","parts":[{"text":"hello"}]}}'
  return wrk.format("POST", "/message:send", {["Content-Type"]="application/json",
                                              ["A2A-Version"]="1.0"}, body)
end
"""

SEND_V03_LUA = r"""
counter = 0
request = function()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":'
    .. '{"kind":"message","messageId":"m' .. counter .. '-' .. math.random(1, 1e9)
    .. '","role":"user","parts":[{"kind":"text","text":"hello"}]}}}'
  return wrk.format("POST", "/", {["Content-Type"]="application/json"}, body)
end
"""

STREAM_LUA = r"""
counter = 0
request = function()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":'
    .. '{"messageId":"s' .. counter .. '-' .. math.random(1, 1e9)
    .. '","role":"ROLE_USER","parts":[{"text":"hello"}]}}}'
  return wrk.format("POST", "/", {["Content-Type"]="application/json", ["A2A-Version"]="1.0",
                                  ["Accept"]="text/event-stream"}, body)
end
"""
# (A stream is one wrk request: sent in chunks on a kept connection, or, from a
# checkout before 2026-12-04, up to the connection's close, which wrk counts as a
# "read error" too.)


GET_TASK_LUA = r"""
wrk.method = "GET"
wrk.headers["A2A-Version"] = "1.0"
"""


def make_task(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/", json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "bench-get", "role": "ROLE_USER",
                               "parts": [{"text": "hello"}]}}}),
        {"Content-Type": "application/json", "A2A-Version": "1.0"})
    return json.loads(conn.getresponse().read())["result"]["task"]["id"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_card(port, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/.well-known/agent-card.json")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.01)
    raise RuntimeError(f"no server on port {port}")


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))


class Peer:
    """A server to measure. ``store``: "sqlite" gives it a new SQLite file
    each time it starts (A2A_STORE); a URL (PostgreSQL) is passed as it is, in
    ``store_variable`` (A2A_STORE, or A2A_SDK_STORE for the SDK's server);
    ``workers``: processes (A2A_WORKERS)."""

    def __init__(self, name, argv, store=None, workers=1, store_variable="A2A_STORE"):
        self.name, self.argv, self.store, self.workers = name, argv, store, workers
        self.store_variable = store_variable

    def __enter__(self):
        self.port = free_port()
        argv = ["taskset", "-c", "0"] + [a.replace("{port}", str(self.port)) for a in self.argv]
        env = dict(os.environ)
        self.folder = None
        if self.store == "sqlite":
            self.folder = tempfile.mkdtemp()
            env["A2A_STORE"] = os.path.join(self.folder, "tasks.db")
        elif self.store and self.store != "memory":
            env[self.store_variable] = self.store
        if self.workers > 1:
            env["A2A_WORKERS"] = str(self.workers)
            argv = argv[3:]                        # (the workers may use both cores)
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env=env)
        wait_for_card(self.port)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)
        if self.folder:
            import shutil
            shutil.rmtree(self.folder, ignore_errors=True)


def cpu_seconds(pid):
    """The CPU time (user and system) a process has used so far (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk(port, connections, seconds, script, path="/"):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}",
                          f"-d{seconds}s", "-s", script, f"http://127.0.0.1:{port}{path}"],
                         capture_output=True, text=True, check=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise RuntimeError(f"{errors.group(1)} failed requests:\n{out}")
    return rate


def first_sse_event_ms(port, samples=200):
    """Time from sending SendStreamingMessage to the first SSE event, one connection."""
    times = []
    for i in range(samples):
        body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "SendStreamingMessage",
                           "params": {"message": {"messageId": f"s{i}-{time.time()}",
                                                  "role": "ROLE_USER",
                                                  "parts": [{"text": "hello"}]}}}).encode()
        request = (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
                   b"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                   b"Connection: close\r\n"
                   b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            started = time.perf_counter()
            sock.sendall(request)
            data = b""
            while not re.search(rb"data:[^\r\n]*(\r\n|\n)(\r\n|\n)", data):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
            times.append((time.perf_counter() - started) * 1000)
            # read the rest so the server finishes the stream cleanly
            sock.settimeout(5)
            try:
                while sock.recv(65536):
                    pass
            except OSError:
                pass
    return statistics.median(times)


def memory_after_tasks(peer, count):
    """RSS at start, and after ``count`` finished tasks (one connection, sequential)."""
    with peer as p:
        start = rss_mib(p.proc.pid)
        conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=30)
        marks = {}
        for i in range(1, count + 1):
            conn.request("POST", "/", json.dumps({
                "jsonrpc": "2.0", "id": i, "method": "SendMessage",
                "params": {"message": {"messageId": f"mem{i}", "role": "ROLE_USER",
                                       "parts": [{"text": "hello"}]}}}),
                {"Content-Type": "application/json", "A2A-Version": "1.0"})
            conn.getresponse().read()
            if i % (count // 2) == 0:
                marks[i] = rss_mib(p.proc.pid)
        return start, marks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk-python", help="python of a venv with a2a-sdk[http-server] and uvicorn")
    parser.add_argument("--python", default=sys.executable, help="python for a2a_min")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=10_000, help="tasks for the memory test")
    parser.add_argument("--skip", default="", help="comma-separated: throughput, sse, memory")
    parser.add_argument("--only", default="",
                        help="throughput scenarios to run: send, rest, get, stream")
    parser.add_argument("--host", default="threads",
                        help="a2a_min's server: threads, asyncio, or both (threads,asyncio)")
    parser.add_argument("--before", metavar="DIR",
                        help="also run a2a_min from this checkout (before a change)")
    parser.add_argument("--stores", default="memory",
                        help="a2a_min's task stores to compare: memory, sqlite, postgres, or "
                             "several (memory,sqlite); the first is the one the ratios divide. "
                             "postgres starts a throw-away PostgreSQL (fsync on) as the tests "
                             "do, and runs the SDK on it too (DatabaseTaskStore: its venv needs "
                             "a2a-sdk[http-server,postgresql])")
    parser.add_argument("--workers", type=int, default=1,
                        help="also run a2a_min (threads, SQLite) with this many processes")
    parser.add_argument("--v03", action="store_true",
                        help="only this: SendMessage in A2A 0.3 against 1.0, on one server "
                             "speaking both (compat='0.3'), alternating rounds")
    parser.add_argument("--bare", action="store_true",
                        help="add the bare asyncio responder (the ceiling) to the comparison")
    args = parser.parse_args()

    hosts = args.host.split(",")
    if args.v03:
        return compare_versions(args, hosts)
    stores = args.stores.split(",")
    database = None
    if "postgres" in stores:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        from postgres_server import PostgresServer
        database = PostgresServer(fsync=True)
    try:
        run(args, hosts, stores, database)
    finally:
        if database is not None:
            database.stop()


def compare_versions(args, hosts):
    """0.3 message/send against 1.0 SendMessage on the same server (one that
    speaks both; a fresh process for each measure, rounds alternating): what
    the translation costs, in requests a second and in the server's CPU time
    a request (what "costs" means when the load generator has a core of its
    own: the rate also moves with how wrk and the server take turns)."""
    scripts = {}
    for name, text in (("1.0", SEND_LUA), ("0.3", SEND_V03_LUA)):
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
            f.write(text)
            scripts[name] = f.name
    print(f"req/s, {args.rounds} rounds of {args.seconds} s, one server speaking 1.0 and 0.3")
    os.environ["A2A_COMPAT"] = "0.3"
    try:
        for host in hosts:
            peer = Peer(f"a2a_min/{host}", [args.python, os.path.join(HERE, "echo_server.py"),
                                            "{port}", host])
            for connections in (1, 16, 64):
                rates, costs = {"1.0": [], "0.3": []}, {"1.0": [], "0.3": []}
                for _ in range(args.rounds):            # a fresh server each: the same store size
                    for version, script in scripts.items():
                        with peer as running:
                            wrk(running.port, connections, 1, script)          # warm up
                            before = cpu_seconds(running.proc.pid)
                            rate = wrk(running.port, connections, args.seconds, script)
                            used = cpu_seconds(running.proc.pid) - before
                            rates[version].append(rate)
                            costs[version].append(used / (rate * args.seconds) * 1e6)
                ratio = statistics.median(a / b for a, b in zip(rates["0.3"], rates["1.0"]))
                more = statistics.median(a / b - 1 for a, b in zip(costs["0.3"], costs["1.0"]))
                print(f"  {peer.name:<16} c={connections:<3}  1.0 {statistics.median(rates['1.0']):7.0f}"
                      f"  0.3 {statistics.median(rates['0.3']):7.0f}   0.3 / 1.0 {ratio:.2f}x"
                      f"   server CPU a request: 1.0 {statistics.median(costs['1.0']):5.1f} us,"
                      f" 0.3 {statistics.median(costs['0.3']):5.1f} us ({more:+.0%})", flush=True)
    finally:
        del os.environ["A2A_COMPAT"]
        for script in scripts.values():
            os.unlink(script)


def run(args, hosts, stores, database):
    url = database.url if database is not None else None
    peers = [Peer("a2a_min" + (f"/{host}" if len(hosts) > 1 else "")
                  + (f"/{store}" if len(stores) > 1 else ""),
                  [args.python, os.path.join(HERE, "echo_server.py"), "{port}", host],
                  url if store == "postgres" else store)
             for host in hosts for store in stores]
    if args.workers > 1:
        peers.append(Peer(f"a2a_min/sqlite/{args.workers} workers",
                          [args.python, os.path.join(HERE, "echo_server.py"), "{port}",
                           "threads"], "sqlite", args.workers))
    ours = peers[0]
    if args.before:
        # The checkout before a change, on the same hosts and stores as ours.
        peers += [Peer("before" + (f"/{host}" if len(hosts) > 1 else "")
                       + (f"/{store}" if len(stores) > 1 else ""),
                       [args.python, os.path.join(args.before, "benchmarks", "echo_server.py"),
                        "{port}", host], url if store == "postgres" else store)
                  for host in hosts for store in stores]
    if args.bare:
        peers.append(Peer("bare", [args.python, os.path.join(HERE, "bare_asyncio.py"), "{port}"]))
    if args.sdk_python:
        peers.append(Peer("a2a-sdk" + ("/postgres" if url else ""),
                          [args.sdk_python, os.path.join(HERE, "sdk_echo_server.py"), "{port}"],
                          url, store_variable="A2A_SDK_STORE"))
    skip = set(args.skip.split(","))
    scripts = {}
    for name, text in (("send", SEND_LUA), ("rest", REST_SEND_LUA), ("get", GET_TASK_LUA),
                       ("stream", STREAM_LUA)):
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
            f.write(text)
            scripts[name] = f.name
    scenarios = [("JSON-RPC SendMessage", "send", (1, 16, 64)),
                 ("HTTP+JSON POST /message:send", "rest", (16,)),
                 ("HTTP+JSON GET /tasks/{id}", "get", (16,)),
                 ("SSE SendStreamingMessage, whole", "stream", (16,))]
    if "throughput" not in skip:
        print(f"req/s, {args.rounds} rounds of {args.seconds} s alternating between servers")
    if args.only:
        scenarios = [s for s in scenarios if s[1] in args.only.split(",")]
    for title, kind, levels in () if "throughput" in skip else scenarios:
        for connections in levels:
            these = peers if kind == "send" else [p for p in peers if p.name != "bare"]
            rates = {p.name: [] for p in these}
            for _ in range(args.rounds):
                for peer in these:
                    with peer as running:
                        path = f"/tasks/{make_task(running.port)}" if kind == "get" else "/"
                        wrk(running.port, connections, 1, scripts[kind], path)     # warm up
                        rates[peer.name].append(
                            wrk(running.port, connections, args.seconds, scripts[kind], path))
            line = f"  {title:<30} c={connections:<3}" + "".join(
                f"  {name} {statistics.median(r):7.0f}" for name, r in rates.items())
            for other in these[1:]:
                ratios = [a / b for a, b in zip(rates[ours.name], rates[other.name])]
                line += f"   / {other.name} {statistics.median(ratios):.2f}x"
            print(line, flush=True)

    real = [p for p in peers if p.name != "bare"]          # the bare responder only answers sends
    if "sse" not in skip:                                  # alternating rounds too
        times = {p.name: [] for p in real}
        for _ in range(args.rounds):
            for peer in real:
                with peer as running:
                    times[peer.name].append(first_sse_event_ms(running.port))
        line = "first SSE event, one connection, median of 200 per round:" + "".join(
            f"  {name} {statistics.median(t):.3f} ms" for name, t in times.items())
        for other in real[1:]:
            ratios = [a / b for a, b in zip(times[ours.name], times[other.name])]
            line += f"   / {other.name} {statistics.median(ratios):.2f}x"
        print(line, flush=True)

    for peer in () if "memory" in skip else real:
        start, marks = memory_after_tasks(peer, args.tasks)
        print(f"RSS {peer.name}: {start:.1f} MiB at start, " + ", ".join(
            f"{v:.1f} MiB after {k} tasks" for k, v in marks.items()), flush=True)
    for script in scripts.values():
        os.unlink(script)


if __name__ == "__main__":
    main()
