"""Side-by-side gRPC benchmark: a2a_grpc against the reference SDK's gRPC server.

Same echo agent; server pinned to core 0, this load generator to core 1;
rounds alternate between the servers and the median per-round ratio is
reported. SendMessage with N concurrent calls (a grpc.aio client keeping N
calls in flight), and the time to the first event of SendStreamingMessage on
one call. Numbers only.

    python benchmarks/grpc_bench.py --sdk-python /tmp/sdk/bin/python [--rounds 3] [--seconds 4]
"""

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

OURS = """
import sys
sys.path.insert(0, {root!r})
import a2a_min, a2a_grpc
server = a2a_min.Server(lambda text: text, name="a2a_min echo", description="echo")
grpc_server, _ = a2a_grpc.create_server(server, "127.0.0.1:" + sys.argv[1])
grpc_server.start()
grpc_server.wait_for_termination()
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Peer:
    def __init__(self, name, argv):
        self.name, self.argv = name, argv

    def __enter__(self):
        import grpc
        self.port = free_port()
        self.proc = subprocess.Popen(["taskset", "-c", "0"] + self.argv + [str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        channel.close()
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(10)


def request(i):
    import a2a_min_pb2 as pb
    return pb.SendMessageRequest(message=pb.Message(
        message_id=f"g{i}-{time.time()}", role=pb.ROLE_USER, parts=[pb.Part(text="hello")]))


async def rate(port, concurrency, seconds):
    import grpc
    import a2a_min_pb2 as pb
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        send = channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage",
                                   request_serializer=pb.SendMessageRequest.SerializeToString,
                                   response_deserializer=pb.SendMessageResponse.FromString)
        metadata = (("a2a-version", "1.0"),)
        done = 0
        deadline = time.monotonic() + seconds

        async def worker(w):
            nonlocal done
            i = 0
            while time.monotonic() < deadline:
                answer = await send(request(f"{w}-{i}"), metadata=metadata)
                assert answer.task.id
                done += 1
                i += 1

        started = time.monotonic()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        return done / (time.monotonic() - started)


def first_event_ms(port, samples=200):
    import grpc
    import a2a_min_pb2 as pb
    times = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stream = channel.unary_stream("/lf.a2a.v1.A2AService/SendStreamingMessage",
                                      request_serializer=pb.SendMessageRequest.SerializeToString,
                                      response_deserializer=pb.StreamResponse.FromString)
        for i in range(samples):
            started = time.perf_counter()
            call = stream(request(i), metadata=(("a2a-version", "1.0"),))
            next(call)
            times.append((time.perf_counter() - started) * 1000)
            for _ in call:
                pass
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk-python")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4)
    args = parser.parse_args()
    os.sched_setaffinity(0, {1})
    peers = [Peer("a2a_grpc", [args.python, "-c", OURS.format(root=ROOT)])]
    if args.sdk_python:
        peers.append(Peer("a2a-sdk", [args.sdk_python, os.path.join(HERE, "sdk_grpc_server.py")]))
    for concurrency in (1, 16):
        rates = {p.name: [] for p in peers}
        for _ in range(args.rounds):
            for peer in peers:
                with peer as running:
                    asyncio.run(rate(running.port, concurrency, 1))          # warm up
                    rates[peer.name].append(asyncio.run(rate(running.port, concurrency,
                                                             args.seconds)))
        line = f"gRPC SendMessage, {concurrency:>2} concurrent calls:" + "".join(
            f"  {n} {statistics.median(r):7.0f}/s" for n, r in rates.items())
        if len(peers) == 2:
            ratios = [a / b for a, b in zip(rates["a2a_grpc"], rates["a2a-sdk"])]
            line += f"   ratio {statistics.median(ratios):.1f}x"
        print(line, flush=True)
    for peer in peers:
        with peer as running:
            print(f"gRPC first stream event, one call, median of 200: {peer.name} "
                  f"{first_event_ms(running.port):.2f} ms", flush=True)


if __name__ == "__main__":
    main()
