"""Time from process start to the first answered agent card, and resident memory.

Usage: python benchmarks/startup.py [--runs 10] -- COMMAND... (use {port} for the port)
Example: python benchmarks/startup.py -- python a2a_min.py --port {port}
"""

import argparse
import http.client
import socket
import statistics
import subprocess
import time


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


def one_run(command):
    port = free_port()
    argv = [part.replace("{port}", str(port)) for part in command]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/.well-known/agent-card.json")
                if conn.getresponse().status == 200:
                    elapsed = time.perf_counter() - started
                    break
            except OSError:
                time.sleep(0.002)
                if time.perf_counter() - started > 30:
                    raise RuntimeError("the server did not answer within 30 s")
        time.sleep(0.2)
        return elapsed, rss_mib(proc.pid)
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("command", nargs="+")
    args = parser.parse_args()
    results = [one_run(args.command) for _ in range(args.runs)]
    times = [r[0] * 1000 for r in results]
    print(f"start to first card: median {statistics.median(times):.1f} ms "
          f"(min {min(times):.1f}, max {max(times):.1f}); "
          f"RSS after start: {statistics.median(r[1] for r in results):.1f} MiB")


if __name__ == "__main__":
    main()
