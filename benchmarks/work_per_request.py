"""Work per request, counted rather than timed: Python lines executed and
function calls for one in-process SendMessage (and GetTask), by function.

Counts do not move with the machine's load, so two trees compare exactly
where req/s on a shared 2-core machine spreads by 10-20% between runs; a
line not executed is time not spent. (Instructions, which count C work too,
come from valgrind: ``valgrind --tool=callgrind python this.py ...`` twice,
with --requests N and 0, and the difference over N.)

Usage: python benchmarks/work_per_request.py [--before DIR] [--top 25]
"""

import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADERS = {"content-type": "application/json", "a2a-version": "1.0", "host": "127.0.0.1:8000"}


def _count(tree, requests, warm=2000):
    """Run in a child process whose a2a_min is ``tree``'s: {function: (lines, calls)} per request."""
    sys.path.insert(0, tree)
    import a2a_min
    server = a2a_min.Server(lambda text: "You said: " + text)

    def send(i):
        body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {
            "message": {"messageId": f"m{i}", "role": "ROLE_USER",
                        "parts": [{"text": "hello"}]}}}).encode()
        return server.handle_http("POST", "/", "", HEADERS, body, "http://127.0.0.1:8000")

    for i in range(warm):                       # (a store in its steady state: evicting)
        send(i)
    lines, calls = collections.Counter(), collections.Counter()

    def trace(frame, event, arg):
        name = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}"
        if event == "call":
            calls[name] += 1
        elif event == "line":
            lines[name] += 1
        return trace

    sys.settrace(trace)
    for i in range(warm, warm + requests):
        send(i)
    sys.settrace(None)
    return {name: (lines[name] / requests, calls[name] / requests)
            for name in set(lines) | set(calls)}


def measure(tree, requests):
    out = subprocess.run([sys.executable, __file__, "--child", tree, "--requests", str(requests)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", help="another checkout to compare with (e.g. a release's)")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--top", type=int, default=25, help="functions to list")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_count(args.child, args.requests)))
        return
    trees = {"a2a_min": os.path.dirname(HERE)}
    if args.before:
        trees["before"] = os.path.abspath(args.before)
    results = {label: measure(tree, args.requests) for label, tree in trees.items()}
    for label, result in results.items():
        print(f"{label}: {sum(v[0] for v in result.values()):.0f} lines, "
              f"{sum(v[1] for v in result.values()):.0f} Python calls per SendMessage")
    mine = results["a2a_min"]
    other = results.get("before", {})
    names = sorted(set(mine) | set(other), key=lambda n: -mine.get(n, (0, 0))[0])
    print(f"\n{'lines':>7} {'calls':>6}" + (f" {'before':>7}" if other else "") + "  function")
    for name in names[:args.top]:
        lines, calls = mine.get(name, (0, 0))
        extra = f" {other.get(name, (0, 0))[0]:7.1f}" if other else ""
        print(f"{lines:7.1f} {calls:6.1f}{extra}  {name}")


if __name__ == "__main__":
    main()
