"""Time from process start to the first answered agent card, and resident memory.

Two ways to start the demo, side by side, in alternating rounds:

- ``python a2a_min.py``: a script is never cached, so Python compiles the
  whole file at every start;
- ``python -m a2a_min``: the module is read from its cached ``.pyc``
  (``__pycache__``, written on the first import; a function package ships
  one: ``python -m compileall -b`` or ``python -m compileall .``).

Usage:
    python benchmarks/startup.py [--runs 9] [--before DIR]
    python benchmarks/startup.py [--runs 9] -- COMMAND... (use {port} for the port)

``--before DIR`` adds ``python a2a_min.py`` in another checkout (a release to
hold start-up to). Also printed: the time to compile the script alone
(``compile()`` of its source, the median of 20), and the RSS at the first
answered card. Numbers only: nothing here passes or fails.
"""

import argparse
import http.client
import os
import py_compile
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one_run(command, cwd=None):
    """(seconds to the first answered card, RSS in MiB then) of one start."""
    port = free_port()
    argv = [part.replace("{port}", str(port)) for part in command]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/.well-known/agent-card.json")
                if conn.getresponse().status == 200:
                    return time.perf_counter() - started, rss_mib(proc.pid)
            except OSError:
                time.sleep(0.002)
                if time.perf_counter() - started > 30:
                    raise RuntimeError("the server did not answer within 30 s")
    finally:
        proc.terminate()
        proc.wait(10)


def compile_ms(path, times=20):
    """The median milliseconds to compile ``path``'s source to a code object."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        compile(source, path, "exec")
        spent.append((time.perf_counter() - started) * 1000)
    return statistics.median(spent)


def report(name, results):
    times = [r[0] * 1000 for r in results]
    print(f"{name:44} start to first card: median {statistics.median(times):6.1f} ms "
          f"(min {min(times):.1f}, max {max(times):.1f}); RSS at first answer "
          f"{statistics.median(r[1] for r in results):.1f} MiB")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--before", metavar="DIR", help="also python a2a_min.py in this checkout")
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    if args.command:
        report(" ".join(args.command), [one_run(args.command) for _ in range(args.runs)])
        return
    python = sys.executable
    py_compile.compile(os.path.join(ROOT, "a2a_min.py"))     # (the cache -m reads)
    ways = [("python a2a_min.py (compiled at each start)",
             [python, "a2a_min.py", "--port", "{port}"], ROOT),
            ("python -m a2a_min (its cached .pyc)",
             [python, "-m", "a2a_min", "--port", "{port}"], ROOT)]
    if args.before:
        ways.append((f"{os.path.basename(os.path.abspath(args.before))}: python a2a_min.py",
                     [python, "a2a_min.py", "--port", "{port}"], args.before))
    results = {name: [] for name, _, _ in ways}
    for _ in range(args.runs):                 # alternating: each round starts each way once
        for name, command, cwd in ways:
            results[name].append(one_run(command, cwd))
    for name, _, _ in ways:
        report(name, results[name])
    for folder in [ROOT] + ([args.before] if args.before else []):
        path = os.path.join(folder, "a2a_min.py")
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        print(f"compile() of {path} ({lines} lines): {compile_ms(path):.1f} ms")


if __name__ == "__main__":
    main()
