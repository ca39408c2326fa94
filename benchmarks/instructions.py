"""Instructions the server process runs per request, counted by valgrind's callgrind.

Usage:
    python3 benchmarks/instructions.py [--before ../other-checkout] [--host threads,asyncio]
                                       [--kind get,send,rest,sse] [--requests 1000]

Each figure is (the instructions of a run of N requests - those of a run of
none) / N, for a server started under callgrind with the benchmark's echo
agent (benchmarks/echo_server.py); both runs start, warm up on 200 requests and
stop alike, so what is left is the requests' own work. Unlike req/s it does not
move with the machine's load: a change's cost shows to a percent or two. A
request is a keep-alive GET /tasks/{id}, a JSON-RPC SendMessage, a POST
/message:send; an SSE figure is one whole SendStreamingMessage stream, on a
connection of its own. Needs valgrind; counts nothing else (not a test).
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def request(kind, i, task_id=None):
    """The bytes of one request of ``kind``."""
    message = {"messageId": f"m{i}", "role": "ROLE_USER", "parts": [{"text": "hello"}]}
    if kind == "get":
        return (b"GET /tasks/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n\r\n"
                % task_id.encode())
    if kind == "rest":
        path, body = "/message:send", {"message": message}
    else:
        method = "SendStreamingMessage" if kind == "sse" else "SendMessage"
        path, body = "/", {"jsonrpc": "2.0", "id": i, "method": method,
                           "params": {"message": message}}
    data = json.dumps(body).encode()
    close = "Connection: close\r\n" if kind == "sse" else ""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\n"
            f"Content-Type: application/json\r\n{close}Content-Length: {len(data)}\r\n\r\n"
            ).encode() + data


def answer(sock):
    """One whole answer with a Content-Length, from a keep-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
    while len(body) < length:
        body += sock.recv(65536)
    return body


def count(checkout, host, kind, requests, port):
    """The instructions callgrind collects in a server of ``checkout`` that answers
    200 warm-up requests and ``requests`` more of ``kind``."""
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         os.path.join(checkout, "benchmarks", "echo_server.py"), str(port), host],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port))
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise SystemExit(f"the server of {checkout} did not start")
            time.sleep(0.2)
    sock.sendall(request("send", -1))
    task_id = json.loads(answer(sock))["result"]["task"]["id"]
    for i in range(-201, requests):
        if i == -1:
            continue
        if kind == "sse":
            with socket.create_connection(("127.0.0.1", port)) as stream:
                stream.sendall(request(kind, i))
                while stream.recv(65536):
                    pass
        else:
            sock.sendall(request(kind, i, task_id))
            answer(sock)
    sock.close()
    time.sleep(0.5)
    server.send_signal(signal.SIGINT)
    err = server.communicate(timeout=300)[1]
    return int(re.search(r"Collected : (\d+)", err).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", metavar="DIR", help="also count a2a_min of this checkout")
    parser.add_argument("--host", default="threads,asyncio")
    parser.add_argument("--kind", default="get,send,rest,sse")
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("this counts with valgrind's callgrind: install valgrind (apt install "
                         "valgrind) and run it again")
    trees = [("a2a_min", os.path.join(HERE, ".."))]
    if args.before:
        trees.append(("before", args.before))
    port = 20000 + os.getpid() % 20000
    print(f"instructions per request in the server process ({args.requests} requests; "
          f"SSE: a whole stream)")
    for host in args.host.split(","):
        for kind in args.kind.split(","):
            figures = []
            for name, tree in trees:
                idle = count(tree, host, kind, 0, port)
                busy = count(tree, host, kind, args.requests, port + 1)
                port += 2
                figures.append(f"{name} {(busy - idle) / args.requests:,.0f}")
            print(f"{host:8} {kind:5} " + "  ".join(figures), flush=True)


if __name__ == "__main__":
    main()
