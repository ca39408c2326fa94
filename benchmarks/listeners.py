"""Many listeners: thousands of SubscribeToTask streams on one server process.

A server (``--host asyncio``, the default, or ``threads``) runs ``--tasks``
tasks; each task's agent commits an artifact every ``--interval`` seconds,
``--events`` times, each holding the wall-clock time it was made (the tasks
take turns within the interval). A subscriber process opens ``--streams``
streams (GET /tasks/{id}:subscribe), spread evenly over the tasks, on
connections of their own, before the first event, and reads them all with
one epoll loop that notes the time each read was ready before reading any
(so its own work does not count). For each event and stream the delay is
the time it arrived minus the time in it; the line
printed gives its p50/p99 over every delivery, and the p99 over events of
the time until the last of a task's subscribers had it. Meanwhile this
process sends GetTask every 10 ms on a connection of its own: its p99
says whether other requests are still answered. The server's RSS is read
before the streams open, once they are open, and at its peak.

    python benchmarks/listeners.py [--streams 10000] [--tasks 100] [--events 20]
    python benchmarks/listeners.py --streams 1000 --tasks 1
    python benchmarks/listeners.py --host threads --streams 600 [--max-connections 512]

The server runs on core 0, the subscribers on core 1 (taskset, where there
is one). The descriptor limit of all three processes is raised to its hard
limit. Numbers only: nothing here passes or fails. On the threaded server a
stream holds a thread; past ``--max-connections`` the subscriber counts the
connections answered 503 (with Retry-After) instead of a stream.
"""

import argparse
import http.client
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

SERVER = r"""
import asyncio, resource, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
sys.path.insert(0, sys.argv[1])
import a2a_min

def plan(text):
    start, interval, count, phase = text.split()
    return float(start) + float(phase), float(interval), int(count)

def agent(ctx):                        # the threaded server's: a thread per turn
    at, interval, count = plan(ctx.text)
    for i in range(count):
        time.sleep(max(0.0, at + i * interval - time.time()))
        yield a2a_min.artifact_update(f"{time.time():.6f}", artifact_id=f"a{i}")

async def async_agent(ctx):            # the asyncio server's: a coroutine per turn
    at, interval, count = plan(ctx.text)
    for i in range(count):
        await asyncio.sleep(max(0.0, at + i * interval - time.time()))
        yield a2a_min.artifact_update(f"{time.time():.6f}", artifact_id=f"a{i}")

host, port, connections, tasks = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
server = a2a_min.Server(async_agent if host == "asyncio" else agent, max_workers=tasks + 16,
                        max_tasks=tasks + 1000, max_caller_streams=connections)
if host == "asyncio":                  # (one client holds every connection and stream here)
    asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", port, max_connections=connections,
                                      max_caller_connections=connections, timeout=600))
else:
    httpd = a2a_min.make_http_server(server, "127.0.0.1", port, max_connections=connections,
                                     max_caller_connections=connections, timeout=600)
    httpd.serve_forever()
"""

SUBSCRIBERS = r"""
import json, re, resource, select, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
port, task_ids, streams = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])
STAMP = re.compile(rb'"artifactId":"a(\d+)".*?"text":"(\d+\.\d+)"')
poller, sockets = select.epoll(), {}
for i in range(streams):               # one connection each, opened one after another
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(b"GET /tasks/%s:subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"A2A-Version: 1.0\r\n\r\n" % task_ids[i % len(task_ids)].encode())
    sock.setblocking(False)
    poller.register(sock, select.EPOLLIN)
    sockets[sock.fileno()] = [sock, task_ids[i % len(task_ids)], b"", None]
arrivals, answered, busy = [], set(), []
while sockets:
    ready = poller.poll(1.0)
    now = time.time()                  # when the bytes were there: before any is read
    for fd, _ in ready:
        entry = sockets[fd]
        data = entry[0].recv(1 << 20)
        if not data or b"TASK_STATE_COMPLETED" in data:      # the stream's end
            poller.unregister(fd)
            entry[0].close()
            del sockets[fd]
        if fd not in answered:
            answered.add(fd)
            if not data.startswith(b"HTTP/1.1 200"):
                busy.append(data.split(b"\r\n", 1)[0].decode())
            if len(answered) == streams:
                print(json.dumps({"open": streams - len(busy), "refused": busy[:3],
                                  "refusals": len(busy)}), flush=True)
        arrivals.append((now, entry, data))
delays, last = [], {}                  # every delivery's delay; (task, event) -> the latest arrival
for now, entry, data in arrivals:      # (a frame read in two pieces arrived with the second)
    *frames, entry[2] = (entry[2] + data).split(b"\n\n")
    task = entry[1]
    for found in STAMP.finditer(b"\n\n".join(frames)):
        delay = now - float(found[2])
        delays.append(delay)
        key = (task, found[1])
        last[key] = max(last.get(key, 0.0), delay)
delays.sort()
spans = sorted(last.values())
q = lambda values, p: values[min(len(values) - 1, int(len(values) * p))] * 1000 if values else 0
print(json.dumps({"deliveries": len(delays), "p50": q(delays, 0.5), "p99": q(delays, 0.99),
                  "max": q(delays, 1.0), "events": len(spans), "all_p99": q(spans, 0.99)}),
      flush=True)
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(core, argv):
    return (["taskset", "-c", str(core)] + argv) if shutil.which("taskset") else argv


def rss(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_or(pid, seen):
    """cpu_seconds(pid), or ``seen`` once the process is gone."""
    try:
        return cpu_seconds(pid)
    except OSError:
        return seen


def call(conn, method, path, body=None):
    conn.request(method, path, body and json.dumps(body),
                 {"Content-Type": "application/json", "A2A-Version": "1.0"})
    response = conn.getresponse()
    return response.status, json.loads(response.read() or b"{}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", choices=("asyncio", "threads"), default="asyncio")
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between a task's events")
    parser.add_argument("--max-connections", type=int, default=None,
                        help="the server's (default: the streams and a few more)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.streams + 100:
        sys.exit(f"the descriptor limit is {hard}: {args.streams} streams need about "
                 f"{args.streams + 100}")
    port = free_port()
    server = subprocess.Popen(pinned(0, [sys.executable, "-c", SERVER, ROOT, args.host, str(port),
                                         str(args.max_connections or args.streams + 64),
                                         str(args.tasks)]))
    subscribers = None
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        conn = http.client.HTTPConnection("127.0.0.1", port)
        setup = 2 + args.streams / 1000             # seconds to open the streams, at most
        start = time.time() + setup
        task_ids = []
        for k in range(args.tasks):
            text = f"{start} {args.interval} {args.events} {k * args.interval / args.tasks}"
            status, answer = call(conn, "POST", "/message:send", {
                "message": {"messageId": f"m{k}", "role": "ROLE_USER", "parts": [{"text": text}]},
                "configuration": {"returnImmediately": True}})
            task_ids.append(answer["task"]["id"])
        before = rss(server.pid)
        subscribers = subprocess.Popen(pinned(1, [sys.executable, "-c", SUBSCRIBERS, str(port),
                                                  ",".join(task_ids), str(args.streams)]),
                                       stdout=subprocess.PIPE, text=True)
        opened = json.loads(subscribers.stdout.readline())
        opened_at = time.time()
        if opened_at > start:
            print(f"the streams took {opened_at - start + setup:.1f} s to open, more than the "
                  f"{setup:.0f} s allowed: the first events were missed", file=sys.stderr)
        with_streams = rss(server.pid)
        probes = []
        while time.time() < start:
            time.sleep(0.01)
        cpu = (cpu_seconds(server.pid), cpu_seconds(subscribers.pid), time.time())
        theirs = cpu[1]
        while subscribers.poll() is None and time.time() < start + args.events * args.interval:
            theirs = cpu_or(subscribers.pid, theirs)
            began = time.perf_counter()
            status, _ = call(conn, "GET", f"/tasks/{task_ids[len(probes) % len(task_ids)]}")
            if time.time() > start:
                probes.append((time.perf_counter() - began) * 1000)
            time.sleep(0.01)
        cpu = [(cpu_seconds(server.pid) - cpu[0]) / (time.time() - cpu[2]),
               (cpu_or(subscribers.pid, theirs) - cpu[1]) / (time.time() - cpu[2])]
        result = json.loads(subscribers.stdout.readline())
        peak = rss(server.pid, "VmHWM")
        probes.sort()
        print(f"{args.host}: {opened['open']} streams open over {args.tasks} tasks"
              + (f" ({opened['refusals']} refused: {opened['refused'][0]})" if opened["refusals"] else "")
              + f"; server RSS {before:.0f} MiB before, {with_streams:.0f} MiB with them, "
              f"{peak:.0f} MiB at its peak")
        print(f"  {result['deliveries']} deliveries: delay p50 {result['p50']:.1f} ms, "
              f"p99 {result['p99']:.1f} ms, max {result['max']:.1f} ms; "
              f"an event at all its task's subscribers: p99 {result['all_p99']:.1f} ms "
              f"({result['events']} events); CPU meanwhile: server {cpu[0]:.0%} of a core, "
              f"subscribers {cpu[1]:.0%}")
        if probes:
            print(f"  GetTask meanwhile ({len(probes)} calls): p50 {statistics.median(probes):.1f} ms, "
                  f"p99 {probes[int(len(probes) * 0.99)]:.1f} ms, max {probes[-1]:.1f} ms")
    finally:
        if subscribers is not None and subscribers.poll() is None:
            subscribers.kill()
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
