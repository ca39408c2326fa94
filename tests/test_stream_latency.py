"""A stream shows what happens as it happens (sections 3.1.2, 4.2.3): the first
event (the Task, or a direct Message) comes while the agent is still busy, and
each output reaches the client before the agent makes the next one.

The agents here wait on a gate that the test opens only after it has read
what must already have arrived: a server that held an output back would leave
the test waiting for it (the read's timeout is a hang guard, not a measure).
Every host that streams: the threaded and asyncio servers, WSGI under
wsgiref, ASGI under uvicorn, and gRPC on a real channel."""

import asyncio
import http.client
import json
import threading

import pytest

import a2a_min
from harness import (AsgiHostClient, AsyncioHostClient, Client, GrpcClient, ThreadsHostClient,
                     WsgiHostClient, grpc_available, need)

HOSTS = {"threads": ThreadsHostClient, "asyncio": AsyncioHostClient,
         "wsgi": WsgiHostClient, "asgi": AsgiHostClient, "grpc": GrpcClient}
GUARD = 20.0           # seconds a read may wait before the test calls it held back


@pytest.fixture(params=sorted(HOSTS))
def host(request):
    if request.param == "asgi":
        need("uvicorn", "ASGI host: needs uvicorn (the test extra)")
    if request.param == "grpc" and not grpc_available():
        pytest.skip("gRPC binding: needs grpcio, protobuf and googleapis-common-protos")
    made = []

    def start(agent, **limits):
        client = HOSTS[request.param](a2a_min.Server(agent, **limits))
        made.append(client)
        return Reader(client)
    yield start
    for client in made:
        client.close()


class Reader:
    """SendStreamingMessage on a live host, its events read one at a time."""

    def __init__(self, client):
        self.client = client

    def open(self, text="hi", method="SendStreamingMessage"):
        params = {"message": {"messageId": "m-" + text, "role": "ROLE_USER",
                              "parts": [{"text": text}]}}
        if isinstance(self.client, GrpcClient):
            self.events = iter(self.client._rpc(method, params, {"a2a-version": "1.0"}))
            self.grpc = True
            return self
        self.grpc = False
        self.conn = http.client.HTTPConnection("127.0.0.1", self.client.port, timeout=GUARD)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        self.conn.request("POST", "/", body=body, headers={
            "A2A-Version": "1.0", "Content-Type": "application/json"})
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        return self

    def next(self):
        """The next StreamResponse (a dict); None at the stream's end."""
        if self.grpc:
            from google.protobuf import json_format
            try:
                return json_format.MessageToDict(next(self.events))
            except StopIteration:
                return None
        data = None
        while True:
            line = self.response.readline()
            if not line:
                return None
            line = line.rstrip(b"\r\n")
            if line.startswith(b"data:"):
                data = json.loads(line[5:])
            elif not line and data is not None:
                return data["result"]

    def rest(self):
        out = []
        while (event := self.next()) is not None:
            out.append(event)
        return out

    def close(self):
        if not self.grpc:
            self.conn.close()


def _text(event):
    assert "artifactUpdate" in event, json.dumps(event)
    return event["artifactUpdate"]["artifact"]["parts"][0]["text"]


def _gate():
    gate = threading.Event()
    gate.wait_for_test = lambda: gate.wait(GUARD + 10)
    return gate


def test_each_output_of_a_sync_generator_arrives_before_the_next_is_made(host):
    first, second = _gate(), _gate()

    def agent(ctx):
        yield "Looking that up... "
        first.wait_for_test()              # (a tool call: nothing to say meanwhile)
        yield "found it"
        second.wait_for_test()

    stream = host(agent).open()
    try:
        task = stream.next()["task"]
        chunk = stream.next()["artifactUpdate"]
        assert chunk["artifact"]["parts"] == [{"text": "Looking that up... "}]
        assert not chunk.get("append") and not chunk.get("lastChunk")
        first.set()
        chunk = stream.next()["artifactUpdate"]
        assert chunk["artifact"]["parts"] == [{"text": "found it"}] and chunk["append"]
        assert not chunk.get("lastChunk")  # (the agent may say more: nobody knows yet)
        second.set()
        # The artifact's end, told by an empty chunk (the last went out already).
        end, done = stream.rest()
        assert end["artifactUpdate"]["artifact"]["parts"] == [{"text": ""}]
        assert end["artifactUpdate"]["append"] and end["artifactUpdate"]["lastChunk"]
        assert done["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["id"] == done["statusUpdate"]["taskId"]
    finally:
        first.set(), second.set()
        stream.close()


def test_each_output_of_an_async_generator_arrives_before_the_next_is_made(host):
    first = _gate()

    async def agent(ctx):
        yield "Looking that up... "
        while not first.is_set():          # (awaiting a tool: the loop runs on)
            await asyncio.sleep(0.005)
        yield "found it"

    stream = host(agent).open()
    try:
        assert "task" in stream.next()
        assert _text(stream.next()) == "Looking that up... "
        first.set()
        events = stream.rest()
        chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
        # The last says lastChunk: itself, made without waiting after it (or, in a shared
        # store, which writes each chunk as it comes, an empty chunk after it).
        assert [c["artifact"]["parts"][0]["text"] for c in chunks if not c.get("lastChunk")] \
            in (["found it"], [])
        assert chunks[-1]["lastChunk"] and chunks[0]["artifact"]["parts"] == [{"text": "found it"}]
        assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        first.set()
        stream.close()


def test_the_task_comes_first_while_a_silent_agent_works_and_can_be_canceled(host):
    gate = _gate()

    def agent(ctx):                        # says nothing for a long time
        gate.wait_for_test()
        return "too late" if not ctx.cancelled.is_set() else None

    reader = host(agent)
    stream = reader.open()
    try:
        task = stream.next()["task"]       # the task, while the agent says nothing
        assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
        # Its id is known: the client can cancel it (from another connection).
        canceled = reader.client.result("CancelTask", {"id": task["id"]})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        assert stream.next()["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
        assert stream.next() is None
    finally:
        gate.set()
        stream.close()


def test_a_direct_message_is_the_whole_stream_and_a_late_one_ends_the_task(host):
    gate = _gate()

    def agent(ctx):
        if ctx == "late":
            gate.wait_for_test()
        yield a2a_min.agent_message("Say something!")

    # (first_event_wait: however busy the machine, the message comes before the Task would)
    stream = host(agent, first_event_wait=GUARD).open("now")    # at once: a Message, no task
    try:
        assert [list(e) for e in stream.rest()] == [["message"]]
    finally:
        stream.close()
    stream = host(agent).open("late")           # after the Task went: the task's last word
    try:
        task = stream.next()["task"]
        gate.set()
        done, = stream.rest()
        status = done["statusUpdate"]["status"]
        assert status["state"] == "TASK_STATE_COMPLETED" and done["statusUpdate"]["taskId"] == \
            task["id"]
        assert status["message"]["parts"] == [{"text": "Say something!"}]
    finally:
        gate.set()
        stream.close()


def test_a_chunked_answer_is_one_artifact_in_the_task_as_in_its_stream():
    """What a stream said is what GetTask shows: the chunks, in order; the
    empty one that only ends the artifact (lastChunk) adds no part."""
    gate = _gate()

    def agent(ctx):
        yield "a"
        yield "b"
        gate.wait_for_test()
        yield "c"

    client = ThreadsHostClient(a2a_min.Server(agent))
    try:
        stream = Reader(client).open()
        events = [stream.next(), stream.next(), stream.next()]
        gate.set()
        events += stream.rest()
        stream.close()
        task_id = events[0]["task"]["id"]
        parts = []
        for event in events[1:]:
            if "artifactUpdate" in event:
                parts += event["artifactUpdate"]["artifact"]["parts"]
        stored = client.result("GetTask", {"id": task_id})
        assert [event for event in events if "artifactUpdate" in event][-1][
            "artifactUpdate"]["lastChunk"]
        # ("c" says lastChunk itself if it was still held when the agent ended, else an
        # empty chunk after it does)
        assert stored["artifacts"][0]["parts"] == [p for p in parts if p["text"]] == [
            {"text": "a"}, {"text": "b"}, {"text": "c"}]
    finally:
        gate.set()
        client.close()


def test_a_sendmessage_answer_has_no_empty_closing_part():
    """Nobody reads a blocking SendMessage's task while its generator runs:
    its chunks are written together, and the last says lastChunk itself."""
    def agent(ctx):
        yield "echo: "
        yield ctx

    task = Client(a2a_min.Server(agent)).send("hi")["task"]
    assert task["artifacts"][0]["parts"] == [{"text": "echo: "}, {"text": "hi"}]


def test_each_line_an_exec_program_prints_arrives_as_it_is_printed(host, tmp_path):
    """serve --exec: a program that prints a line, then waits (here for a file
    the test makes only once that line has arrived), then prints another."""
    import sys
    import a2a_cli
    gate = tmp_path / "go"
    code = ("import os, sys, time\nprint('first', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.005)\n"
            "print('second', flush=True)\n")
    stream = host(a2a_cli.exec_agent([sys.executable, "-c", code])).open()
    try:
        assert "task" in stream.next()
        assert stream.next()["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
        assert _text(stream.next()) == "first\n"
        gate.write_text("")
        events = stream.rest()
        chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
        assert chunks[0]["artifact"]["parts"] == [{"text": "second\n"}] and chunks[-1]["lastChunk"]
        assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        gate.write_text("")
        stream.close()


@pytest.mark.parametrize("host_class", [ThreadsHostClient, AsyncioHostClient])
def test_a_subscriber_that_reads_nothing_is_let_go_though_the_kernel_took_its_bytes(host_class):
    """A client that stops reading while the kernel still takes the stream's
    bytes (they fit in its buffers: no write ever waits, so no timeout ever
    fires) is let go at the second keep-alive that finds them all still
    there; it used to hold its connection, and on threads a thread, for ever."""
    import socket
    import time

    def agent(ctx):
        yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "x" * 8000)
    client = host_class(a2a_min.Server(agent, keepalive_interval=0.2))
    try:
        task_id = client.result("SendMessage", {"message": {
            "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})["task"]["id"]
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)    # (a window soon full)
        sock.connect(("127.0.0.1", client.port))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                           "params": {"id": task_id}}).encode()
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: "
                     b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        time.sleep(2)                      # (reading nothing: ten keep-alives' time)
        sock.settimeout(GUARD)
        got, ended, deadline = b"", False, time.monotonic() + GUARD
        try:
            while not ended and time.monotonic() < deadline:    # (keep-alives: it never ends)
                data = sock.recv(65536)
                got, ended = got + data, not data
        except ConnectionResetError:       # (asyncio aborts it)
            ended = True
        assert b'"task"' in got and ended  # it had its task, then its connection ended
    finally:
        client.close()
