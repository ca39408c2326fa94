"""Token streaming, side by side: an agent that yields N chunks of "tok " per turn.

A language model's agent answers in hundreds of small text chunks; this
measures what each costs. a2a_min runs benchmarks/token_server.py (a generator
agent: each str it yields is a chunk of one artifact), the reference SDK
benchmarks/sdk_token_server.py (TaskUpdater.add_artifact with append=True per
chunk). Each whole SendStreamingMessage stream is one wrk request (as in
run.py's SSE scenario); before each
measure one stream is read and its artifact chunks counted, so a rate never
counts streams that lost chunks. Reported per N and connections:
  streams/s, chunks/s (streams/s x N), and the server's CPU per chunk
  (user + system time over the measure, divided by the chunks sent).
The server is pinned to core 0 and wrk to core 1; rounds alternate between
the servers and each ratio is the median of the rounds' ratios. Numbers only.

Setup (once): apt-get install wrk; python -m venv /tmp/sdk &&
    /tmp/sdk/bin/pip install 'a2a-sdk[http-server]==1.3.0' uvicorn
Run:
    python benchmarks/tokens.py --sdk-python /tmp/sdk/bin/python [--host threads,asyncio]
        [--chunks 1,20,200] [--connections 1,16] [--rounds 3] [--seconds 3] [--before DIR]
"""

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile

from run import HERE, STREAM_LUA, Peer, cpu_seconds, wrk



def chunks_in_one_stream(port, count):
    """Read one stream of ``count`` chunks whole: how many artifact chunks came."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("POST", "/", json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
        "params": {"message": {"messageId": f"check-{os.getpid()}-{count}", "role": "ROLE_USER",
                               "parts": [{"text": str(count)}]}}}),
        {"Content-Type": "application/json", "A2A-Version": "1.0",
         "Accept": "text/event-stream"})
    text = connection.getresponse().read().decode()
    connection.close()
    found = 0
    for line in text.splitlines():
        if line.startswith("data:"):
            result = json.loads(line[5:]).get("result", {})
            if "artifactUpdate" in result:      # (not the empty chunk that says lastChunk)
                found += sum(1 for part in result["artifactUpdate"]["artifact"]["parts"]
                             if part.get("text"))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk-python", help="python of a venv with a2a-sdk[http-server] and uvicorn")
    parser.add_argument("--python", default=sys.executable, help="python for a2a_min")
    parser.add_argument("--host", default="threads,asyncio", help="a2a_min's servers")
    parser.add_argument("--chunks", default="1,20,200", help="chunks per turn (N)")
    parser.add_argument("--connections", default="1,16")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--before", metavar="DIR", help="also run a2a_min from this checkout")
    args = parser.parse_args()
    server = os.path.join(HERE, "token_server.py")
    peers = [Peer(f"a2a_min/{host}", [args.python, server, "{port}", host])
             for host in args.host.split(",")]
    if args.before:
        peers += [Peer(f"before/{host}", [args.python, server, "{port}", host, args.before])
                  for host in args.host.split(",")]
    if args.sdk_python:
        peers.append(Peer("a2a-sdk", [args.sdk_python, os.path.join(HERE, "sdk_token_server.py"),
                                      "{port}"]))
    print(f"{args.rounds} rounds of {args.seconds} s alternating between servers; "
          "streams/s, chunks/s, server CPU per chunk (us)", flush=True)
    for count in map(int, args.chunks.split(",")):
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
            f.write(STREAM_LUA.replace('"text":"hello"', '"text":"%d"' % count))   # (run.py's, asking N)
        try:
            for connections in map(int, args.connections.split(",")):
                rates = {p.name: [] for p in peers}
                costs = {p.name: [] for p in peers}
                for _ in range(args.rounds):
                    for peer in peers:
                        with peer as running:
                            got = chunks_in_one_stream(running.port, count)
                            if got != count:
                                raise RuntimeError(f"{peer.name}: {got} chunks of {count}")
                            wrk(running.port, connections, 1, f.name)          # warm up
                            before = cpu_seconds(running.proc.pid)
                            rate = wrk(running.port, connections, args.seconds, f.name)
                            used = cpu_seconds(running.proc.pid) - before
                            rates[peer.name].append(rate)
                            costs[peer.name].append(used / (rate * args.seconds * count) * 1e6)
                line = f"N={count:<4} c={connections:<3}"
                for peer in peers:
                    rate = statistics.median(rates[peer.name])
                    line += (f"  {peer.name} {rate:7.1f} /s {rate * count:8.0f} chunks/s"
                             f" {statistics.median(costs[peer.name]):6.1f} us")
                for peer in peers:              # each a2a_min against its before and the SDK
                    for other in (peer.name.replace("a2a_min/", "before/"), "a2a-sdk"):
                        if peer.name.startswith("a2a_min/") and other in rates:
                            ratio = statistics.median(
                                a / b for a, b in zip(rates[peer.name], rates[other]))
                            line += f"   {peer.name} / {other} {ratio:.2f}x"
                print(line, flush=True)
        finally:
            os.unlink(f.name)


if __name__ == "__main__":
    main()
