"""What TLS costs: SendMessage over HTTPS with keep-alive against plain HTTP on
the same server, and new connections (a handshake each) per second.

    python benchmarks/tls.py [--host threads,asyncio] [--rounds 3] [--seconds 3]

Method as benchmarks/run.py's: the server pinned to core 0, wrk to core 1, a
fresh server for each measure, rounds alternating plain and TLS, medians. The
certificate is a throw-away ECDSA P-256 one (openssl), as most are today.
Numbers only: nothing here passes or fails.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import SEND_LUA, cpu_seconds, free_port, wait_for_card  # noqa: E402

SERVER = r"""
import sys
sys.path.insert(0, sys.argv[1])
import a2a_min
def echo(text):
    return text
async def async_echo(text):
    return text
port, host, cert = int(sys.argv[2]), sys.argv[3], sys.argv[4]
tls = {"cert": cert + ".pem", "key": cert + ".key"} if cert != "-" else None
server = a2a_min.Server(async_echo if host == "asyncio" else echo, name="echo")
if host == "asyncio":
    import asyncio
    asyncio.run(a2a_min.serve_asyncio(server, "127.0.0.1", port, tls=tls, on_ready=lambda _: None))
else:
    a2a_min.serve(server, "127.0.0.1", port, tls=tls, on_ready=lambda _: None)
"""

CLOSE_LUA = SEND_LUA.replace('["A2A-Version"]="1.0"}', '["A2A-Version"]="1.0", ["Connection"]="close"}')


def certificate(folder):
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    subprocess.run(["openssl", "req", "-x509", *ec, "-keyout", "server.key", "-out", "server.pem",
                    "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"],
                   cwd=folder, check=True, capture_output=True)
    return os.path.join(folder, "server")


def measure(host, cert, script, connections, seconds, folder):
    port = free_port()
    proc = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", SERVER,
                             os.path.dirname(HERE), str(port), host, cert or "-"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scheme = "https" if cert else "http"
    try:
        if cert:
            deadline = time.monotonic() + 20
            while subprocess.run(["curl", "-skf", "-o", "/dev/null",
                                  f"https://127.0.0.1:{port}/.well-known/agent-card.json"]
                                 ).returncode != 0 and time.monotonic() < deadline:
                time.sleep(0.1)
        else:
            wait_for_card(port)
        argv = ["taskset", "-c", "1", "wrk", "-t1", f"-c{connections}", "-s", script,
                f"{scheme}://127.0.0.1:{port}/"]
        subprocess.run(argv[:4] + ["-d1s"] + argv[4:], capture_output=True)     # warm up
        before = cpu_seconds(proc.pid)
        out = subprocess.run(argv[:4] + [f"-d{seconds}s"] + argv[4:], capture_output=True,
                             text=True).stdout
        used = cpu_seconds(proc.pid) - before
        rate = float(out.split("Requests/sec:")[1].split()[0])
        return rate, used / (rate * seconds) * 1e6
    finally:
        proc.terminate()
        proc.wait(10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="threads,asyncio")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    cert = certificate(folder)
    scripts = {}
    for name, text in (("keep", SEND_LUA), ("close", CLOSE_LUA)):
        path = os.path.join(folder, name + ".lua")
        with open(path, "w") as f:
            f.write(text)
        scripts[name] = path
    print(f"req/s (server CPU a request), {args.rounds} rounds of {args.seconds} s, "
          "plain and TLS alternating")
    for host in args.host.split(","):
        for label, script, connections in (("SendMessage, keep-alive", "keep", 16),
                                           ("a new connection each", "close", 16)):
            got = {"plain": [], "TLS": []}
            for _ in range(args.rounds):
                for kind, use in (("plain", None), ("TLS", cert)):
                    got[kind].append(measure(host, use, scripts[script], connections,
                                             args.seconds, folder))
            line = [f"  {host:<8} {label:<26} c={connections}"]
            for kind in ("plain", "TLS"):
                rate = statistics.median(r for r, _ in got[kind])
                cost = statistics.median(c for _, c in got[kind])
                line.append(f"{kind} {rate:7.0f} ({cost:5.1f} us)")
            ratio = statistics.median(t[0] / p[0] for t, p in zip(got["TLS"], got["plain"]))
            line.append(f"TLS / plain {ratio:.2f}x")
            print("   ".join(line), flush=True)


if __name__ == "__main__":
    main()
