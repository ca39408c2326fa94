"""1,000 SSE streams open at once on the asyncio server: one process, no thread
per stream, memory under 100 MiB, every stream ends with its task, and the
server answers other requests meanwhile."""

import json
import os
import selectors
import socket
import subprocess
import sys
import time

from harness import ROOT

STREAMS = 1000

# An async agent that says it is working and waits, without a thread, until
# a message "release" comes; then every waiting task finishes.
SERVER = r"""
import asyncio, sys
sys.path.insert(0, sys.argv[2])
import a2a_min

release = None

async def agent(ctx):
    global release
    release = release or asyncio.Event()
    if ctx.text == "release":
        release.set()
        yield "released"
        return
    yield a2a_min.status_update("TASK_STATE_WORKING")
    await release.wait()
    yield "done"

# One client (this test) holds every stream: past the per-caller limits, and
# room for 1,000 connections under the connection cap (3/4 of the open files).
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
if soft != resource.RLIM_INFINITY and soft < want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
server = a2a_min.Server(agent, max_tasks=5000, max_caller_streams=5000)
asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", int(sys.argv[1]), max_caller_connections=5000,
                                  on_ready=lambda _: print("ready", flush=True)))
"""


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        return next(line.split()[1] for line in f if line.startswith(field + ":"))


LAST_CHUNK = b"\r\n0\r\n\r\n"     # the end of a chunked stream (RFC 9112 section 7.1)


def stream_request(i, text="wait"):
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": f"scale-{i}", "role": "ROLE_USER",
                    "parts": [{"text": text}]}}}).encode()
    return (b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def test_1000_concurrent_streams_under_100_mib():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(port), ROOT],
                            stdout=subprocess.PIPE, text=True)
    socks, received = [], {}
    try:
        assert proc.stdout.readline().strip() == "ready"
        selector = selectors.DefaultSelector()
        for i in range(STREAMS):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            sock.sendall(stream_request(i))
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, i)
            socks.append(sock)
            received[i] = b""

        def pump(until, timeout):
            deadline = time.monotonic() + timeout
            while not until() and time.monotonic() < deadline:
                for key, _ in selector.select(0.2):
                    data = key.fileobj.recv(65536)
                    received[key.data] += data
                    if not data:
                        selector.unregister(key.fileobj)

        # Every stream has its first events: the task, then WORKING.
        pump(lambda: all(b"TASK_STATE_WORKING" in d for d in received.values()), 30)
        working = sum(b"TASK_STATE_WORKING" in d for d in received.values())
        assert working == STREAMS
        rss_mib = int(proc_status(proc.pid, "VmRSS")) / 1024
        threads = int(proc_status(proc.pid, "Threads"))
        assert rss_mib < 100, f"{rss_mib:.1f} MiB with {STREAMS} open streams"
        assert threads < 10, f"{threads} threads for {STREAMS} streams"
        # Meanwhile the server answers other clients at once.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as other:
            started = time.monotonic()
            other.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert other.recv(65536).startswith(b"HTTP/1.1 200")
            assert time.monotonic() - started < 1.0
        # Then every task completes, and its stream ends with it.
        with socket.create_connection(("127.0.0.1", port), timeout=5) as other:
            other.sendall(stream_request(STREAMS, "release"))
            reply = b""
            while not reply.endswith(LAST_CHUNK):        # (a stream keeps its connection)
                reply += other.recv(65536)
            assert b"released" in reply and b"Transfer-Encoding: chunked" in reply
        pump(lambda: all(d.endswith(LAST_CHUNK) for d in received.values()), 60)
        completed = sum(b"TASK_STATE_COMPLETED" in d for d in received.values())
        assert completed == STREAMS
        print(f"\n{STREAMS} streams: {rss_mib:.1f} MiB, {threads} threads")
    finally:
        for sock in socks:
            sock.close()
        proc.terminate()
        proc.wait(10)
