"""The client's own cost: a2a_client against the reference SDK's client, on one server.

One fast local server (a2a_min's threaded server with the echo agent, pinned
to core 0) answers both clients; each client runs in a process of its own on
core 1 and sends SendMessage calls one after another. What is reported is the
client process's CPU time per call (time.process_time: its own work, not the
server's nor the waiting), and the wall time per call; rounds alternate
between the two clients and the medians are reported. Then the command line:
start to printed answer, for ``a2a-min send`` (the installed command) and
``python a2a_min.py send`` (a script, compiled on every run). Numbers only.

    python benchmarks/client.py [--sdk-python PYTHON] [--calls 2000] [--rounds 5]

The SDK's client needs a Python with a2a-sdk 1.3.0 and httpx (the test extra
has both; default: this Python).
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

OURS = r"""
import sys, time
sys.path.insert(0, sys.argv[3])
import a2a_client
client = a2a_client.Client(sys.argv[1])
calls = int(sys.argv[2])
for _ in range(50):
    client.send("hello")
cpu, wall = time.process_time(), time.perf_counter()
for _ in range(calls):
    assert client.send("hello")["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
print((time.process_time() - cpu) / calls * 1e6, (time.perf_counter() - wall) / calls * 1e6)
"""

SDK = r"""
import asyncio, sys, time, uuid
import httpx
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest

async def main(url, calls):
    async with httpx.AsyncClient(timeout=30) as http:
        client = await create_client(url, ClientConfig(streaming=False, httpx_client=http,
                                                       supported_protocol_bindings=["JSONRPC"]))
        async def send():
            request = SendMessageRequest(message=Message(
                message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text="hello")]))
            async for event in client.send_message(request):
                return event
        for _ in range(50):
            await send()
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(calls):
            await send()
        print((time.process_time() - cpu) / calls * 1e6, (time.perf_counter() - wall) / calls * 1e6)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def pinned(core, argv):
    return (["taskset", "-c", str(core)] if shutil.which("taskset") else []) + argv


def start_server(port):
    proc = subprocess.Popen(pinned(0, [sys.executable, os.path.join(HERE, "echo_server.py"),
                                       str(port)]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import socket
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the server did not start")


def client_round(python, script, url, calls):
    out = subprocess.run(pinned(1, [python, "-c", script, url, str(calls), ROOT]),
                         capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr)
    cpu, wall = map(float, out.stdout.split())
    return cpu, wall


def command_line(argv, runs=15):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(pinned(1, argv), check=True, capture_output=True, cwd=ROOT,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk-python", default=sys.executable)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--port", type=int, default=8321)
    args = parser.parse_args()
    server = start_server(args.port)
    url = f"http://127.0.0.1:{args.port}"
    try:
        rows = {"a2a_client": [], "a2a-sdk client": []}
        for _ in range(args.rounds):
            rows["a2a_client"].append(client_round(sys.executable, OURS, url, args.calls))
            rows["a2a-sdk client"].append(client_round(args.sdk_python, SDK, url, args.calls))
        print(f"SendMessage, {args.calls} calls a round, {args.rounds} rounds (medians)")
        print(f"{'client':<16} {'CPU us/call':>12} {'wall us/call':>13}")
        medians = {}
        for name, values in rows.items():
            cpu = statistics.median(v[0] for v in values)
            wall = statistics.median(v[1] for v in values)
            medians[name] = cpu
            print(f"{name:<16} {cpu:>12.0f} {wall:>13.0f}")
        print(f"the SDK's client costs {medians['a2a-sdk client'] / medians['a2a_client']:.1f} "
              "times a2a_client's CPU per call")
        command = os.path.join(os.path.dirname(sys.executable), "a2a-min")
        print("\ncommand line, start to printed answer (ms, median and best of 15):")
        if os.path.exists(command):
            print("  a2a-min send URL hello          %.0f  %.0f" %
                  command_line([command, "send", url, "hello"]))
        print("  python a2a_min.py send URL hello %.0f  %.0f" %
              command_line([sys.executable, "a2a_min.py", "send", url, "hello"]))
        print("  python -m a2a_min send URL hello %.0f  %.0f" %
              command_line([sys.executable, "-m", "a2a_min", "send", url, "hello"]))
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
