"""Long-poll GetTask (A2A 1.1 draft) against SubscribeToTask: what a waiter costs.

One server process (``--host asyncio``, the default, or ``threads``) and, for
each measurement, a fresh task waiting for input (its agent answers "ask"
with INPUT_REQUIRED). A waiter process opens ``--waiters`` connections, one
after another, each holding either

  (a) a long-poll GetTask (header ``A2A-Version: 1.1``, ``currentGeneration``
      the task's generation), answered only once the task moves past it, or
  (b) a SubscribeToTask SSE stream (``A2A-Version: 1.0``), whose first event
      (the Task) it reads before going on,

all on one task, and all open before the wake: the server's stats() (asked
for with SIGUSR1) must count every one as a stream. The server's RSS and its
thread count (/proc/PID/status) are read before the waiters and with them all
waiting; then this process sends one SendMessage continuing the task, which
moves its generation on, and the waiter process, reading every connection
with one epoll loop that notes the time each read was ready before reading
any, gives the delay from that send to each waiter's answer (the long-poll's
whole HTTP answer; the stream's first event after the Task): p50, p99, max,
and the time until the last of them had it (all had it: the max, if every
waiter opened was woken; else nan). Each round's line also says in how many
returns of epoll the answers were read: answers read in one return share its
time, so a p50 equal to the max means they were all there when the waiter
process next ran (on a busy machine: that it was not running). The server's
CPU seconds are counted while the waiters open and from the wake to the last
answer. ``--rounds`` rounds alternate (a) and (b) (their order too) on the
same server; the table at the end gives each one's medians.

    python benchmarks/long_poll.py [--waiters 1000] [--rounds 3]
    python benchmarks/long_poll.py --host threads --waiters 200
    python benchmarks/long_poll.py --binding jsonrpc     # POST / instead of the REST routes

The server runs on core 0, the waiters on core 1 (taskset, where there is
one). The descriptor limit of all three processes is raised to its hard
limit; the server's max_connections, max_caller_connections and
max_caller_streams are raised to the waiters and a few more. Numbers only:
nothing here passes or fails; a waiter refused, answered before the wake,
answered without the task having moved (the wait ran out) or not answered at
all is counted and shown. The long-polls wait at most ``--wait`` seconds (the
server's long_poll_wait, 60 here). RSS is the process's resident set: memory
freed by one measurement would be reused by the next, so before each the
server collects garbage and calls malloc_trim(0) (SIGUSR2; not with
``--no-trim``); the first measurement still pays for the server's one-time
growth, which a median of three or more rounds leaves out.
"""

import argparse
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SERVER = r"""
import asyncio, ctypes, gc, json, resource, signal, sys
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
sys.path.insert(0, sys.argv[1])
import a2a_min

def agent(ctx):                        # the threaded server's: a thread per turn
    if ctx.text == "ask":
        yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more"); return
    yield a2a_min.status_update("TASK_STATE_WORKING")
    yield "done"

async def async_agent(ctx):            # the asyncio server's: a coroutine per turn
    if ctx.text == "ask":
        yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more"); return
    yield a2a_min.status_update("TASK_STATE_WORKING")
    yield "done"

host, port, connections, wait = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
server = a2a_min.Server(async_agent if host == "asyncio" else agent, max_caller_streams=connections,
                        long_poll_wait=wait)

def report(*_):                        # SIGUSR1: the streams open now, on stdout
    print(json.dumps({"streams": server.stats()["streams"]}), flush=True)

def trim(*_):                          # SIGUSR2: memory freed goes back (RSS before a round)
    gc.collect()
    if libc is not None:
        libc.malloc_trim(0)
    print(json.dumps({"trimmed": True}), flush=True)

try:
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc_trim
except (OSError, AttributeError):      # (not glibc)
    libc = None
signal.signal(signal.SIGUSR1, report)
signal.signal(signal.SIGUSR2, trim)
if host == "asyncio":                  # (one client holds every connection and stream here)
    asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", port, max_connections=connections,
                                      max_caller_connections=connections, timeout=600))
else:
    httpd = a2a_min.make_http_server(server, "127.0.0.1", port, max_connections=connections,
                                     max_caller_connections=connections, timeout=600)
    httpd.serve_forever()
"""

WAITERS = r"""
import json, resource, select, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
port, mode, binding, task_id, generation, count, deadline = (
    int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
    float(sys.argv[7]))

def post(body, version):
    body = json.dumps(body).encode()
    return (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: %s\r\nContent-Type: "
            b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (version, len(body), body))

if mode == "poll":
    request = (b"GET /tasks/%s?currentGeneration=%d HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               b"A2A-Version: 1.1\r\n\r\n" % (task_id.encode(), generation)) if binding == "rest" \
        else post({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                   "params": {"id": task_id, "currentGeneration": generation}}, b"1.1")
else:
    request = (b"POST /tasks/%s:subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
               b"Content-Length: 0\r\n\r\n" % task_id.encode()) if binding == "rest" \
        else post({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                   "params": {"id": task_id}}, b"1.0")

poller, conns = select.epoll(), {}
for i in range(count):                 # one connection each, opened one after another
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(request)
    sock.setblocking(False)
    poller.register(sock, select.EPOLLIN)
    conns[sock.fileno()] = {"sock": sock, "data": b"", "frames": 0, "at": None, "answer": None}

refused, answers = [], []              # answers: (the time it was whole, its kind)

def finish(fd, kind, at):
    entry = conns.pop(fd)
    poller.unregister(fd)
    entry["sock"].close()
    answers.append((at, kind))

def look(fd, now):
    entry = conns[fd]
    data = entry["data"]
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return
    status = head.split(b"\r\n", 1)[0]
    if not status.startswith(b"HTTP/1.1 200"):
        if len(refused) < 3:
            refused.append(status.decode(errors="replace"))
        finish(fd, "refused", now)
        return
    if mode == "poll":
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), None)
        if length is None or len(body) < length:
            return
        try:
            task = json.loads(body[:length])
            task = task.get("result", task)
            kind = "woken" if task.get("generation", 0) > generation else "stale"
        except ValueError:
            kind = "garbled"
        finish(fd, kind, now)
    else:                              # SSE: the Task, then the event the wake makes
        frames = [f for f in body.split(b"\n\n")[:-1] if b"data:" in f]
        if len(frames) >= 1 and entry["frames"] == 0:
            entry["frames"] = 1
            opened.add(fd)
        if len(frames) >= 2:
            finish(fd, "woken", now)

opened = set()                         # (a stream whose Task has come)
while conns and mode == "sub" and len(opened) + len(answers) < count and time.time() < deadline:
    for fd, _ in poller.poll(0.5):     # a stream is open once its first event has come
        chunk = conns[fd]["sock"].recv(1 << 16)
        if not chunk:
            finish(fd, "closed", time.time())
            continue
        conns[fd]["data"] += chunk
        look(fd, time.time())
print(json.dumps({"open": sum(1 for e in conns.values() if mode == "poll" or e["frames"]),
                  "refused": refused, "refusals": sum(1 for _, k in answers if k == "refused")}),
      flush=True)
while conns and time.time() < deadline:
    ready = poller.poll(0.5)
    now = time.time()                  # when the bytes were there: before any is read
    for fd, _ in ready:
        chunk = conns[fd]["sock"].recv(1 << 16)
        if not chunk:
            finish(fd, "closed", now)
            continue
        conns[fd]["data"] += chunk
        look(fd, now)
print(json.dumps({"answers": answers, "unanswered": len(conns), "refused": refused}), flush=True)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(core, argv):
    return (["taskset", "-c", str(core)] + argv) if shutil.which("taskset") else argv


def status(pid, field):
    with open(f"/proc/{pid}/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def call(conn, method, path, body=None, version="1.1"):
    conn.request(method, path, body and json.dumps(body),
                 {"Content-Type": "application/json", "A2A-Version": version})
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"{}")


def ask(server, sign, key):
    """The server's answer to ``sign``: its line on stdout with ``key``."""
    server.send_signal(sign)
    line = server.stdout.readline()
    while line and not line.startswith('{"%s"' % key):
        line = server.stdout.readline()       # (anything else the server prints)
    return json.loads(line)[key]


def streams(server):
    """The server's open streams (its stats(), asked for with SIGUSR1)."""
    return ask(server, signal.SIGUSR1, "streams")


def settle(server, want, seconds):
    """Ask until the server counts ``want`` streams, for at most ``seconds``; the last count."""
    deadline = time.monotonic() + seconds
    while True:
        held = streams(server)
        if held == want or time.monotonic() > deadline:
            return held
        time.sleep(0.1)


def measure(args, server, conn, mode, number):
    status_, answer = call(conn, "POST", "/message:send", {"message": {
        "messageId": f"ask{number}", "role": "ROLE_USER", "parts": [{"text": "ask"}]}})
    task = answer.get("task", {})
    _, task = call(conn, "GET", f"/tasks/{task['id']}")
    generation = task.get("generation", 0)
    if args.trim:
        ask(server, signal.SIGUSR2, "trimmed")
        time.sleep(0.1)
    before = {"rss": status(server.pid, "VmRSS"), "threads": status(server.pid, "Threads"),
              "cpu": cpu_seconds(server.pid)}
    deadline = time.time() + 5 + args.waiters / 200 + args.wait + 5
    waiters = subprocess.Popen(pinned(1, [sys.executable, "-c", WAITERS, str(args.port), mode,
                                          args.binding, task["id"], str(generation),
                                          str(args.waiters), str(deadline)]),
                               stdout=subprocess.PIPE, text=True)
    try:
        opened = json.loads(waiters.stdout.readline())
        held = settle(server, opened["open"], 10)
        time.sleep(0.3)                # (the server idle again: its RSS as it waits)
        during = {"rss": status(server.pid, "VmRSS"), "threads": status(server.pid, "Threads"),
                  "cpu": cpu_seconds(server.pid)}
        sent = time.time()
        wake_status, _ = call(conn, "POST", "/message:send", {
            "message": {"messageId": f"more{number}", "role": "ROLE_USER",
                        "parts": [{"text": "go on"}], "taskId": task["id"],
                        "contextId": task["contextId"]},
            "configuration": {"returnImmediately": True}})
        result = json.loads(waiters.stdout.readline())
        cpu_wake = cpu_seconds(server.pid) - during["cpu"]
        waiters.wait(10)
    finally:
        if waiters.poll() is None:
            waiters.kill()
            waiters.wait()
    leftover = settle(server, 0, 10)   # (the task ends: every stream closes)
    early = sum(1 for at, kind in result["answers"] if at < sent)
    kinds = {}
    for at, kind in result["answers"]:
        kinds[kind] = kinds.get(kind, 0) + 1
    times = [at for at, kind in result["answers"] if kind == "woken" and at >= sent]
    delays = sorted((at - sent) * 1000 for at in times)
    q = lambda p: delays[min(len(delays) - 1, int(len(delays) * p))] if delays else float("nan")
    return {"mode": mode, "open": opened["open"], "counted": held, "early": early,
            "refused": kinds.get("refused", 0),
            "refusal": (opened["refused"] or result["refused"] or [""])[0],
            "woken": len(delays), "kinds": kinds, "unanswered": result["unanswered"],
            "wake_status": wake_status, "leftover": leftover, "generation": generation,
            "rss_before": before["rss"] / 1024, "rss_with": during["rss"] / 1024,
            "kib_each": (during["rss"] - before["rss"]) / max(1, opened["open"]),
            "threads_before": before["threads"], "threads_with": during["threads"],
            "batches": len(set(times)), "first": q(0.0), "p50": q(0.5), "p99": q(0.99),
            "max": q(1.0), "all": q(1.0) if len(delays) == opened["open"] else float("nan"),
            "cpu_open": during["cpu"] - before["cpu"], "cpu_wake": cpu_wake}


NAMES = {"poll": "(a) long-poll GetTask", "sub": "(b) SubscribeToTask"}
COLUMNS = (("rss_before", "RSS before MiB", "{:.1f}"), ("rss_with", "RSS with MiB", "{:.1f}"),
           ("kib_each", "KiB/waiter", "{:.1f}"), ("threads_before", "threads before", "{:.0f}"),
           ("threads_with", "threads with", "{:.0f}"), ("p50", "p50 ms", "{:.1f}"),
           ("p99", "p99 ms", "{:.1f}"), ("max", "max ms", "{:.1f}"),
           ("all", "all had it ms", "{:.1f}"), ("cpu_open", "CPU open s", "{:.2f}"),
           ("cpu_wake", "CPU wake s", "{:.2f}"))


def describe(number, row):
    others = {k: v for k, v in row["kinds"].items() if k != "woken"}
    problems = [f"{row['refused']} refused ({row['refusal']})" if row["refused"] else "",
                f"{row['early']} answered before the wake" if row["early"] else "",
                f"answers {others}" if others else "",
                f"{row['unanswered']} not answered" if row["unanswered"] else "",
                f"server counted {row['counted']} streams" if row["counted"] != row["open"] else "",
                f"the wake was answered {row['wake_status']}" if row["wake_status"] != 200 else "",
                f"{row['leftover']} streams left after" if row["leftover"] else ""]
    print(f"round {number} {NAMES[row['mode']]}: {row['open']} open (generation "
          f"{row['generation']}), {row['woken']} woken; RSS {row['rss_before']:.1f} -> "
          f"{row['rss_with']:.1f} MiB ({row['kib_each']:.1f} KiB each), threads "
          f"{row['threads_before']} -> {row['threads_with']}; delay first {row['first']:.1f} ms, "
          f"p50 {row['p50']:.1f}, p99 {row['p99']:.1f}, max {row['max']:.1f} (read in "
          f"{row['batches']} wakes of the waiters' epoll); CPU {row['cpu_open']:.2f} s opening, "
          f"{row['cpu_wake']:.2f} s waking" + "".join(f"; {p}" for p in problems if p),
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", choices=("asyncio", "threads"), default="asyncio")
    parser.add_argument("--waiters", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--binding", choices=("rest", "jsonrpc"), default="rest",
                        help="GET /tasks/{id} and POST /tasks/{id}:subscribe, or JSON-RPC POST /")
    parser.add_argument("--wait", type=float, default=60.0,
                        help="the server's long_poll_wait (seconds)")
    parser.add_argument("--no-trim", dest="trim", action="store_false",
                        help="do not collect garbage and malloc_trim(0) the server before each "
                             "measurement (then memory freed by one is reused by the next)")
    parser.add_argument("--max-connections", type=int, default=None,
                        help="the server's (default: the waiters and a few more)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.waiters + 100:
        sys.exit(f"the descriptor limit is {hard}: {args.waiters} waiters need about "
                 f"{args.waiters + 100}")
    args.port = free_port()
    server = subprocess.Popen(pinned(0, [sys.executable, "-c", SERVER, ROOT, args.host,
                                         str(args.port),
                                         str(args.max_connections or args.waiters + 64),
                                         str(args.wait)]),
                              stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", args.port)).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=args.wait + 30)
        rows = []
        for number in range(1, args.rounds + 1):
            for mode in (("poll", "sub") if number % 2 else ("sub", "poll")):
                rows.append(measure(args, server, conn, mode, number))
                describe(number, rows[-1])
        print(f"\n{args.host}, {args.waiters} waiters on one task ({args.binding}), medians of "
              f"{args.rounds} rounds:")
        width = max(len(name) for name in NAMES.values())
        print(" " * width + "".join(f"  {title}" for _, title, _ in COLUMNS))
        for mode in ("poll", "sub"):
            mine = [row for row in rows if row["mode"] == mode]
            print(f"{NAMES[mode]:<{width}}" + "".join(
                f"  {form.format(statistics.median(row[key] for row in mine)):>{len(title)}}"
                for key, title, form in COLUMNS))
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    main()
