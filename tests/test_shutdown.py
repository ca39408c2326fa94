"""Graceful shutdown on SIGTERM, over real sockets, on both bundled servers:
no new connections, requests in flight finish, an open stream follows its
task's running turn to the end (past the grace, or with no turn running, it
ends with an SSE retry hint: clients resume with Last-Event-ID), the process
exits 0. Hosts
that own their signals call server.shutdown(grace) themselves (in-process
test at the end). Also server.stats(), the counters behind every limit."""

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import a2a_min
from harness import ROOT, V1, Client, exchange, free_port, run_host, scenario_agent, user_message

HOST = ("import sys; sys.path[:0] = [{root!r}, {tests!r}]; import a2a_min\n"
        "from harness import scenario_agent\n"
        "server = a2a_min.Server(scenario_agent)\n")
HOSTS = {
    "via_threads": "a2a_min.serve(server, '127.0.0.1', {port}, grace=5)",
    "via_asyncio": ("import asyncio\n"
                    "asyncio.run(a2a_min.serve_asyncio(server, '127.0.0.1', {port}, grace=5))"),
}
HEADERS = b"Host: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\n"


def request(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    return b"POST / HTTP/1.1\r\n" + HEADERS + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_sigterm_finishes_requests_and_the_turns_streams_and_exits_0(name):
    port = free_port()
    code = HOST.format(root=ROOT, tests=ROOT + "/tests") + HOSTS[name].format(port=port)
    proc = run_host([sys.executable, "-c", code], port)
    try:
        slow = json.loads(exchange(port, request("SendMessage", {
            "message": user_message("slow2"), "configuration": {"returnImmediately": True}}),
            until=b"}}", timeout=5).partition(b"\r\n\r\n")[2])["result"]["task"]["id"]
        stream = socket.create_connection(("127.0.0.1", port), timeout=10)
        stream.sendall(request("SubscribeToTask", {"id": slow}))
        got = b""
        while b"data:" not in got:
            got += stream.recv(65536)
        box = {}
        in_flight = threading.Thread(target=lambda: box.update(out=exchange(
            port, request("SendMessage", {"message": user_message("slow1")}), until=b"}}}",
            timeout=10)))
        in_flight.start()
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        while True:                                    # the stream sees the turn end
            chunk = stream.recv(65536)
            if not chunk:
                break
            got += chunk
        assert b"TASK_STATE_COMPLETED" in got and b"retry:" not in got, got[-300:]
        in_flight.join(10)
        assert b"TASK_STATE_COMPLETED" in box["out"]   # the request in flight was answered
        assert proc.wait(10) == 0
        with pytest.raises(OSError):                   # and nothing listens any more
            socket.create_connection(("127.0.0.1", port), timeout=1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def test_shutdown_in_process_ends_streams_and_waits_for_turns():
    server = a2a_min.Server(scenario_agent, keepalive_interval=30)
    client = Client(server)
    task_id = client.send("slow0.5", configuration={"returnImmediately": True})["task"]["id"]
    resp = client.raw({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                       "params": {"id": task_id}})
    frames = []
    reader = threading.Thread(target=lambda: frames.extend(resp.stream))
    reader.start()
    time.sleep(0.1)
    started = time.monotonic()
    left = server.shutdown(grace=5)
    reader.join(5)
    assert left == {"turns": 0, "deliveries": 0}
    assert time.monotonic() - started < 4               # waited for the turn, not the grace
    assert b"TASK_STATE_COMPLETED" in frames[-1]        # the stream saw the turn end
    assert client.result("GetTask", {"id": task_id})["status"]["state"] == "TASK_STATE_COMPLETED"


def test_shutdown_ends_at_once_the_streams_of_no_turn_and_past_the_grace_the_others():
    """A stream on a task that waits for input ends at once, with a retry
    hint; one following a turn that outlasts the grace ends when it is over."""
    gate = threading.Event()

    def agent(ctx):
        if ctx.text == "wait":
            yield a2a_min.status_update("TASK_STATE_INPUT_REQUIRED", "say more")
            return
        yield a2a_min.status_update("TASK_STATE_WORKING")
        gate.wait(60)
        yield "done"
    server = a2a_min.Server(agent, keepalive_interval=30)
    client = Client(server)
    try:
        waiting = client.send("wait")["task"]["id"]
        running = client.send("run", configuration={"returnImmediately": True})["task"]["id"]
        frames, readers = {}, {}
        for task_id in (waiting, running):
            resp = client.raw({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask",
                               "params": {"id": task_id}})
            frames[task_id] = []
            readers[task_id] = threading.Thread(target=frames[task_id].extend,
                                                args=(resp.stream,))
            readers[task_id].start()
        stopping = threading.Thread(target=server.shutdown, kwargs={"grace": 0.5})
        stopping.start()
        readers[waiting].join(10)
        assert frames[waiting][-1].endswith(b"retry: 1000\n\n")
        stopping.join(10)
        readers[running].join(10)
        assert not readers[running].is_alive()
        assert not any(b"TASK_STATE_COMPLETED" in frame for frame in frames[running])
        if server.store.shared:      # (the task outlives us: shutdown ends it, FAILED, and says)
            assert b"TASK_STATE_FAILED" in frames[running][-1]
        else:
            assert frames[running][-1].endswith(b"retry: 1000\n\n")
    finally:
        gate.set()


def test_stats_show_the_counters_behind_the_limits():
    server = a2a_min.Server(scenario_agent, max_tasks_per_caller=1, max_body_bytes=1000)
    client = Client(server)
    client.send("slow5", configuration={"returnImmediately": True})
    for _ in range(2):
        server.handle_http("POST", "/", "", dict(V1), json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": user_message("x")}}).encode())
    server.handle_http("POST", "/message:send", "", dict(V1), b"{" + b" " * 2000 + b"}")
    stats = server.stats()
    assert stats["store"]["tasks"] == 1 and stats["store"]["bytes"] > 0
    assert stats["refused"] == {"max_tasks_per_caller": 2, "PAYLOAD_TOO_LARGE": 1}
    assert stats["live_tasks"] == 1 and stats["agent_threads"] >= 1
    assert set(stats["push"]) >= {"delivered", "dropped", "by_caller"}
    server.shutdown(grace=0)


def test_the_stats_log_line_reports_only_what_changed(caplog):
    """a2a_cli.log_stats (the command line's --stats-interval)."""
    import logging
    import a2a_cli
    server = a2a_min.Server(lambda text: "ok")
    client = Client(server)
    with caplog.at_level(logging.INFO, logger="a2a_min"):
        client.send("x")
        a2a_cli.log_stats(server, 0.1)                 # the first line: everything
        for _ in range(4):
            time.sleep(0.12)
            client.call("ListTasks", {})
        lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stats:")]
        assert lines and "store.max_tasks=10000" in lines[0]
        assert any("store.tasks=1" in line for line in lines)
        assert all("store.max_tasks" not in line for line in lines[1:])   # unchanged: not again
    server.shutdown(grace=0)


def test_a2a_grpc_stops_on_sigterm_and_exits_0():
    pytest.importorskip("grpc")
    port, grpc_port = free_port(), free_port()
    proc = run_host([sys.executable, "a2a_grpc.py", "--port", str(port), "--grpc-port",
                     str(grpc_port)], port)
    try:
        socket.create_connection(("127.0.0.1", grpc_port), timeout=5).close()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


# -- Ctrl-C, as a person presses it (issue 33) -------------------------------------------------

def demo_process(port, *args):
    """The demo (main()) on ``port``, its program sleeping: a turn that runs."""
    from harness import need
    need("sleep", "the demo's agent here is the sleep program (serve --exec)")
    proc = subprocess.Popen([sys.executable, "a2a_min.py", "--port", str(port), *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert "Ctrl-C stops" in proc.stdout.readline()
    return proc


@pytest.mark.parametrize("host", ["threads", "asyncio"])
def test_ctrl_c_says_what_it_waits_for_and_a_second_stops_at_once(host):
    port = free_port()
    proc = demo_process(port, "--server", host, "--exec", "sleep 60")
    try:
        exchange(port, request("SendMessage", {"message": user_message("x"), "configuration": {
            "returnImmediately": True}}), until=b"}}", timeout=10)
        time.sleep(0.5)                                # (the program started)
        proc.send_signal(signal.SIGINT)
        said = proc.stderr.readline() or proc.stderr.readline()
        said += proc.stderr.readline() if not said.strip() else ""
        assert "stopping: waiting up to 10 s for 1 running task; Ctrl-C again to stop now" \
            in said, said
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(10)
        rest = proc.stderr.read()
        assert time.monotonic() - started < 5              # at once, not after the grace
        assert code == 130 and "Traceback" not in rest, rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def client_stream(port, text="x", until="started"):
    proc = subprocess.Popen([sys.executable, "a2a_min.py", "send", f"http://127.0.0.1:{port}",
                             text, "--stream"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    lines = []
    while not any(until in line for line in lines):
        line = proc.stdout.readline()
        assert line, (lines, proc.stderr.read())
        lines.append(line)
    return proc, lines


def test_ctrl_c_in_send_stream_says_how_to_follow_or_cancel_the_task():
    port = free_port()
    server = demo_process(port, "--exec", "sh -c 'echo started; echo waiting; sleep 60'")
    try:
        proc, lines = client_stream(port, until="waiting")   # (its last line until then)
        task_id = lines[0].split()[2]
        last = lines[-1].split("]")[0].lstrip("[")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 130 and "Traceback" not in err, err
        url = f"http://127.0.0.1:{port}"
        assert f"a2a_min.py watch {url} {task_id} --last-event-id {last}" in err, err
        assert f"a2a_min.py cancel {url} {task_id}" in err, err
        # The line runs as printed: cancel stops the task.
        cancel = err.split("stop it:")[1].strip().replace("python3 ", sys.executable + " ", 1)
        done = subprocess.run(cancel, shell=True, cwd=ROOT, capture_output=True, text=True,
                              timeout=30)
        assert "CANCELED" in done.stdout, done
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(15)


@pytest.mark.parametrize("host", ["threads", "asyncio"])
def test_ctrl_c_lets_an_open_stream_see_its_turn_end(host, tmp_path):
    """Ctrl-C waits for the running turn, and its stream follows it to the
    end: the client sees COMPLETED (exit 0), not a cut stream."""
    gate = tmp_path / "gate"
    port = free_port()
    server = demo_process(port, "--server", host, "--exec", "sh -c 'echo started; echo waiting; "
                          f"while [ ! -e {gate} ]; do sleep 0.05; done; echo finished'")
    try:
        proc, lines = client_stream(port)
        server.send_signal(signal.SIGINT)
        said = ""
        while "stopping:" not in said:
            line = server.stderr.readline()
            assert line, said
            said += line
        gate.touch()                                   # the turn ends after Ctrl-C
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, (out, err)
        assert "finished" in out and "COMPLETED" in out and "watch" not in err, (out, err)
        assert server.wait(15) == 0 or server.returncode == 130
    finally:
        gate.touch()
        if server.poll() is None:
            server.kill()
        server.wait(15)


@pytest.mark.parametrize("host", ["threads", "asyncio"])
def test_a_stream_cut_by_a_server_shutdown_says_so_and_how_to_resume(host):
    """The turn outlasts the server's grace (0.5 s): its stream ends with a retry hint."""
    port = free_port()
    code = ("import sys; sys.path[:0] = [{root!r}]; import a2a_cli, a2a_min\n"
            "agent = a2a_cli.exec_agent(['sh', '-c', 'echo started; echo waiting; sleep 60'])\n"
            "server = a2a_min.Server(agent)\n").format(root=ROOT) + HOSTS[f"via_{host}"].format(
        port=port).replace("grace=5", "grace=0.5")
    server = run_host([sys.executable, "-c", code], port)
    try:
        proc, lines = client_stream(port)
        task_id = lines[0].split()[2]
        server.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=40)
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(15)
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert "shutting down or restarting" in err, (err, out)
    assert re.search(rf"a2a_min\.py watch http://127\.0\.0\.1:{port} {task_id} "
                     r"--last-event-id \d+", err), err


def test_the_read_side_drain_shuts_is_not_taken_for_a_clients_close():
    """drain() shuts the read side of every open connection (an idle one wakes
    and closes); the hang-up watch of a connection that streams saw that as
    its client's close, and the stream ended without its retry frame (one in
    ten shutdowns). Here, ten: each stream's last frame says why it ends."""
    import socket
    from harness import Live

    def agent(ctx):
        yield "working"
        ctx.cancelled.wait(5)                      # (the grace passes first)

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}}).encode()
    for _ in range(10):
        live = Live(a2a_min.Server(agent))
        with socket.create_connection(("127.0.0.1", live.port), timeout=10) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nA2A-Version: 1.0\r\nContent-Type: "
                         b"application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            got = b""
            while b"working" not in got:
                got += sock.recv(65536)
            live.httpd.shutdown()                  # (serve_forever returns: then drain)
            live.httpd.drain(grace=0.05)
            while (data := sock.recv(65536)):
                got += data
        # (the retry frame; or, with a store other processes share, the task's end: FAILED,
        # saying the server shut down)
        assert b"retry: 1000" in got or b"the server shut down" in got, got[-300:]
