"""a2a_cli.py's serve --exec: any program as the agent (a process per message), and what
it must survive: programs that fail, hang, never read, flood, fork, or
ignore SIGTERM. Real processes (this Python, sh), real signals."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from harness import ROOT, Client, free_port, user_message
import a2a_min
import a2a_cli  # noqa: E402

PY = sys.executable


def program(code):
    return [PY, "-c", code]


def serve(argv, **options):
    return Client(a2a_min.Server(a2a_cli.exec_agent(argv, **options)))


def alive(pid):
    """Whether a process exists, zombies included (they are still in /proc)."""
    return os.path.exists(f"/proc/{pid}")


def artifact_text(task):
    return "".join(p.get("text", "") for a in task.get("artifacts", ()) for p in a["parts"])


def test_the_message_in_its_output_out_a_chunk_a_line_with_the_task_in_its_environment():
    client = serve(program("import os, sys\n"
                           "print('task', os.environ['A2A_TASK_ID'], os.environ['A2A_CONTEXT_ID'])\n"
                           "for line in sys.stdin: print(line.strip().upper(), flush=True)"))
    task = client.result("SendMessage", {"message": user_message("one\ntwo")})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    parts = [p["text"] for p in task["artifacts"][0]["parts"]]
    assert parts == [f"task {task['id']} {task['contextId']}\n", "ONE\n", "TWO\n"]
    events = [frame["result"] for _, frame in client.stream(
        "SendStreamingMessage", {"message": user_message("a\nb")})]
    chunks = [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in events
              if "artifactUpdate" in e]
    assert chunks[1:] in (["A\n", "B\n"], ["A\n", "B\n", ""])   # (an empty chunk may end it)
    assert [e for e in events if "artifactUpdate" in e][-1]["artifactUpdate"]["lastChunk"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_chunk_delimiter_and_output_without_any():
    client = serve(program("import sys; sys.stdout.write('a,b,c')"), chunk=",")
    task = client.result("SendMessage", {"message": user_message("x")})["task"]
    assert [p["text"] for p in task["artifacts"][0]["parts"]] == ["a,", "b,", "c"]
    client = serve(program("import sys; sys.stdout.write('no newline at all')"))
    task = client.result("SendMessage", {"message": user_message("x")})["task"]
    assert artifact_text(task) == "no newline at all"


def test_a_failing_program_fails_the_task_with_its_last_error_lines():
    client = serve(program("import sys\nfor i in range(20): print('noise', i, file=sys.stderr)\n"
                           "print('the real reason', file=sys.stderr); sys.exit(3)"))
    task = client.result("SendMessage", {"message": user_message("x")})["task"]
    message = task["status"]["message"]["parts"][0]["text"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert message.startswith("the program exited with 3:") and message.endswith("the real reason")
    assert "noise 14" not in message and message.count("\n") == 5


def test_a_program_that_never_reads_its_input_still_answers():
    client = serve(program("import time; time.sleep(0.2); print('ignored you')"))
    task = client.result("SendMessage", {"message": user_message("x" * 300_000)})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert artifact_text(task) == "ignored you\n"


def test_a_flood_is_cut_off_at_max_output():
    client = serve(program("import sys\nwhile True: sys.stdout.write('y' * 65536)"),
                   max_output=200_000)
    started = time.monotonic()
    task = client.result("SendMessage", {"message": user_message("x")})["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "more than 200000 bytes" in task["status"]["message"]["parts"][0]["text"]
    assert time.monotonic() - started < 10


def test_a_program_past_its_timeout_is_stopped():
    client = serve(program("import time; print('started', flush=True); time.sleep(60)"),
                   timeout=0.5)
    started = time.monotonic()
    task = client.result("SendMessage", {"message": user_message("x")})["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "longer than 0.5 s" in task["status"]["message"]["parts"][0]["text"]
    assert time.monotonic() - started < 5


def test_the_timeout_holds_while_the_output_becomes_events():
    """A program that writes many lines at once and exits: they come in one
    read, and each line is an event to store. The timeout holds while they
    are (it was looked at between reads only, so a read of 20,000 lines held
    the turn, and its --max-procs slot, until every one was stored: 39 s for
    the README's 15,000). Here the first line's commit outlasts the timeout."""
    class SlowStore(a2a_min.TaskStore):
        def commit(self, task, *args, **kwargs):
            if task.get("artifacts") and not getattr(self, "slowed", False):
                self.slowed = True
                time.sleep(0.8)
            return super().commit(task, *args, **kwargs)
    agent = a2a_cli.exec_agent(program("import os; os.write(1, b'line\\n' * 20000)"),
                                timeout=0.5)
    client = Client(a2a_min.Server(agent, store=SlowStore()))
    task = client.result("SendMessage", {"message": user_message("x")})["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "longer than 0.5 s" in task["status"]["message"]["parts"][0]["text"]
    assert len(task["artifacts"][0]["parts"]) < 100     # (each line a commit: few came)


@pytest.mark.parametrize("kind", ["plain", "forks a child", "ignores SIGTERM"])
def test_cancel_ends_the_program_and_all_it_started_and_leaves_no_zombie(tmp_path, kind):
    pids = tmp_path / "pids"
    code = {
        "plain": "import os, time\nopen(%r, 'w').write(str(os.getpid()))\n"
                 "print('up', flush=True); time.sleep(60)",
        "forks a child": "import os, subprocess, sys, time\n"
                         "child = subprocess.Popen([sys.executable, '-c', 'import time; "
                         "time.sleep(60)'])\n"
                         "open(%r, 'w').write('%%d %%d' %% (os.getpid(), child.pid))\n"
                         "print('up', flush=True); time.sleep(60)",
        "ignores SIGTERM": "import os, signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                           "open(%r, 'w').write(str(os.getpid()))\n"
                           "print('up', flush=True); time.sleep(60)",
    }[kind] % str(pids)
    client = serve(program(code))
    task_id = client.result("SendMessage", {"message": user_message("x"),
                                            "configuration": {"returnImmediately": True}}
                            )["task"]["id"]
    deadline = time.monotonic() + 10
    while not (pids.exists() and pids.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    running = [int(p) for p in pids.read_text().split()]
    assert all(alive(pid) for pid in running)
    assert client.result("CancelTask", {"id": task_id})["status"]["state"] == \
        "TASK_STATE_CANCELED"
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in running) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in running), running    # killed and reaped


def test_at_most_max_procs_run_at_once():
    client = serve(program("import time; time.sleep(1); print('done')"), max_procs=1)
    first = client.result("SendMessage", {"message": user_message("a"),
                                          "configuration": {"returnImmediately": True}})
    time.sleep(0.2)
    refused = client.error("SendMessage", {"message": user_message("b")})
    assert refused["data"][0]["reason"] == "SERVER_BUSY" and "--max-procs" in refused["message"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        state = client.result("GetTask", {"id": first["task"]["id"]})["status"]["state"]
        if state == "TASK_STATE_COMPLETED":
            break
        time.sleep(0.1)
    assert state == "TASK_STATE_COMPLETED"
    third = client.result("SendMessage", {"message": user_message("c")})["task"]
    assert third["status"]["state"] == "TASK_STATE_COMPLETED"             # the slot came back


def test_serve_exec_and_echo_on_the_command_line():
    import http.client
    for flags, text, expected in ((["--exec", f"{PY} -c 'import sys; print(sys.stdin.read()[::-1])'"],
                                   "abc", "cba\n"),
                                  (["--echo"], "same", "same")):
        port = free_port()
        demo = subprocess.Popen([PY, "a2a_min.py", "--port", str(port), *flags], cwd=ROOT,
                                stdout=subprocess.PIPE, text=True)
        try:
            assert "agent on http://" in demo.stdout.readline()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/message:send", json.dumps({"message": user_message(text)}),
                         {"A2A-Version": "1.0", "Content-Type": "application/json"})
            task = json.loads(conn.getresponse().read())["task"]
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            assert artifact_text(task) == expected
        finally:
            demo.terminate()
            demo.wait(10)


def test_no_shell_runs_the_command():
    """The command is split like a shell would split it, and never given to one."""
    client = serve(["echo", "$HOME", ";", "touch", "/tmp/a2a-exec-injected"])
    task = client.result("SendMessage", {"message": user_message("x")})["task"]
    assert artifact_text(task) == "$HOME ; touch /tmp/a2a-exec-injected\n"
    assert not os.path.exists("/tmp/a2a-exec-injected")


def test_check_finds_nothing_wrong_with_a_program_behind_a2a():
    """serve --exec probed like any agent: check URL --full over real sockets,
    with `cat` (this Python, reading its input) as the agent."""
    import io
    import a2a_client, a2a_check, a2a_cli
    from harness import Live
    live = Live(a2a_min.Server(a2a_cli.exec_agent(program(
        "import sys\nfor line in sys.stdin: print(line, end='', flush=True)"))), timeout=5)
    try:
        out = io.StringIO()
        failed = a2a_check.check(live.url, out=out, full=True)
    finally:
        live.close()
    assert failed == 0 and out.getvalue().endswith("no failures\n"), out.getvalue()
    assert "PASS  §3.1.2   the stream ends with the task's end: TASK_STATE_COMPLETED" in \
        out.getvalue()


def test_a_program_that_does_not_exist_is_said_at_start_up():
    done = subprocess.run([PY, "a2a_min.py", "--port", "0", "--exec", "no-such-program-a2a"],
                          cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--exec: no program 'no-such-program-a2a'" in done.stderr


# -- what a program leaves behind (issue 34) ----------------------------------------------------
#
# A program runs as long as its turn, never longer: not past the server's
# shutdown, nor its worker's death, nor a cancel; it sees the environment it
# needs and not the server's secrets; and what reaches its environment from
# the request is made fit for one.


def running(pid):
    """Whether a process runs: it exists and is not a zombie (one that is
    dead but not yet reaped by whoever adopted it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def pid_in(path):
    """The pid a program wrote to ``path`` (once it has)."""
    assert wait_for(lambda: path.exists() and path.read_text().strip()), "the program never started"
    return int(path.read_text().split()[0])


def send_at_once(port, text="x"):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/message:send", json.dumps({
        "message": user_message(text), "configuration": {"returnImmediately": True}}),
        {"A2A-Version": "1.0", "Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    conn.close()
    return answer


def lingering(pids, marks):
    """A program that says it is up and sleeps, noting SIGTERM when it comes."""
    return program(
        "import os, signal, sys, time\n"
        f"def term(*_): open({str(marks)!r}, 'a').write('TERM\\n'); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, term)\n"
        f"open({str(pids)!r}, 'w').write(str(os.getpid()))\n"
        "print('up', flush=True); time.sleep(60)")


@pytest.mark.parametrize("host", ["threads", "threads, 2 workers", "asyncio"])
def test_sigterm_stops_the_programs_that_outlive_the_grace(tmp_path, host):
    """serve() and serve_asyncio() with an --exec agent, stopped by SIGTERM:
    a program still running past the grace gets SIGTERM, then SIGKILL; none
    runs on, adopted by PID 1. (A 10 s grace on the command line; here 0.3 s.)"""
    import signal
    pids, marks, port = tmp_path / "pid", tmp_path / "marks", free_port()
    agent = f"a2a_cli.exec_agent({lingering(pids, marks)!r})"
    if host == "asyncio":
        run = (f"asyncio.run(a2a_min.serve_asyncio(a2a_min.Server({agent}), '127.0.0.1', "
               f"{port}, grace=0.3))")
    else:
        store = f"store=a2a_store.SQLiteStore({str(tmp_path / 'tasks.db')!r})" \
            if "workers" in host else ""
        run = (f"a2a_min.serve(a2a_min.Server({agent}, {store}), '127.0.0.1', {port}, "
               f"grace=0.3, workers={2 if 'workers' in host else 1})")
    server = subprocess.Popen([PY, "-c", f"import asyncio, a2a_min, a2a_cli, a2a_store\n{run}"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pid = None
    try:
        assert wait_for(lambda: _listening(port)), server.stderr.read()
        assert "task" in send_at_once(port)
        pid = pid_in(pids)
        server.send_signal(signal.SIGTERM)
        server.wait(30)
        assert wait_for(lambda: not running(pid)), "the program runs on after the server"
        assert marks.read_text() == "TERM\n"           # asked first, as a process manager does
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
        if pid and running(pid):
            os.kill(pid, 9)


def _listening(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_a_worker_killed_takes_its_program_with_it(tmp_path):
    """kill -9 of the worker that runs a program: the program dies with it
    (PR_SET_PDEATHSIG), rather than run on with nobody to read it."""
    pids, port, script = tmp_path / "pid", free_port(), tmp_path / "linger.py"
    script.write_text(lingering(pids, tmp_path / "marks")[2])
    server = subprocess.Popen(
        [PY, "a2a_min.py", "--port", str(port), "--workers", "2", "--store",
         str(tmp_path / "tasks.db"), "--exec", f"{PY} {script}"], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    pid = None
    try:
        assert "Ctrl-C stops" in server.stdout.readline()
        assert "task" in send_at_once(port)
        pid = pid_in(pids)
        with open(f"/proc/{pid}/stat") as f:
            worker = int(f.read().rsplit(")", 1)[1].split()[1])
        assert worker != server.pid
        os.kill(worker, 9)
        assert wait_for(lambda: not running(pid)), "the program outlived its worker"
    finally:
        server.terminate()
        server.wait(30)
        if pid and running(pid):
            os.kill(pid, 9)


def test_programs_a_grpc_server_starts_are_never_crashed_by_grpcs_fork_handlers():
    """Beside a gRPC server whose threads are inside gRPC, a forked child runs
    gRPC's fork handlers, and one in a few crashed (SIGSEGV) before it was the
    program: each program is started without our code between fork and exec
    (setpriv sets the death signal), so Popen vforks and none runs."""
    from harness import GrpcClient, grpc_available
    if not grpc_available():
        pytest.skip("gRPC binding: needs grpcio, protobuf and googleapis-common-protos")
    client = GrpcClient(a2a_min.Server(a2a_cli.exec_agent(["echo", "hi"])))
    try:
        from google.protobuf.json_format import MessageToDict
        ends = []
        for n in range(30):
            *_, last = client._rpc("SendStreamingMessage", {"message": user_message(f"x{n}")},
                                   {"a2a-version": "1.0"})
            ends.append(MessageToDict(last)["statusUpdate"]["status"])
        assert all(end["state"] == "TASK_STATE_COMPLETED" for end in ends), ends
    finally:
        client.close()


def test_cancel_ends_a_program_that_closed_its_output_and_frees_its_slot(tmp_path):
    pids = tmp_path / "pid"
    client = serve(program(
        "import os, sys, time\n"
        "text = sys.stdin.read()\n"
        "if text != 'linger': print(text); sys.exit(0)\n"
        "sys.stdout.close(); os.close(1)\n"
        f"open({str(pids)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(60)"), max_procs=1)
    task_id = client.result("SendMessage", {"message": user_message("linger"), "configuration": {
        "returnImmediately": True}})["task"]["id"]
    pid = pid_in(pids)
    try:
        time.sleep(0.3)                                # (its output seen to end)
        assert client.result("CancelTask", {"id": task_id})["status"]["state"] == \
            "TASK_STATE_CANCELED"
        assert wait_for(lambda: not alive(pid)), "canceled, yet the program runs on"
        # Its one slot (max_procs=1) is free again.
        assert wait_for(lambda: "task" in client.call(
            "SendMessage", {"message": user_message("next")}).get("result", {}), 5)
    finally:
        if alive(pid):
            os.kill(pid, 9)


def test_the_program_sees_a_small_environment_not_the_servers_secrets(monkeypatch):
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    monkeypatch.setenv("A2A_STORE", "postgresql://app:hunter2@db.internal/tasks")
    monkeypatch.setenv("LANG", "C.UTF-8")
    shows = program("import json, os; print(json.dumps(dict(os.environ)))")
    task = serve(shows).result("SendMessage", {"message": user_message("x")})["task"]
    seen = json.loads(artifact_text(task))
    assert "DB_PASSWORD" not in seen and "A2A_STORE" not in seen, sorted(seen)
    assert seen["PATH"] == os.environ["PATH"] and seen["HOME"] == os.environ["HOME"]
    assert seen["LANG"] == "C.UTF-8" and seen["A2A_TASK_ID"] == task["id"]
    assert set(seen) <= {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
                         "A2A_TASK_ID", "A2A_CONTEXT_ID"}, sorted(seen)
    task = serve(shows, pass_env=["DB_PASSWORD", "NOT_SET_ANYWHERE"]).result(
        "SendMessage", {"message": user_message("x")})["task"]
    seen = json.loads(artifact_text(task))
    assert seen["DB_PASSWORD"] == "hunter2" and "NOT_SET_ANYWHERE" not in seen


def test_pass_env_on_the_command_line():
    import http.client
    port = free_port()
    shows = (f"{PY} -c 'import os; "
             "print(os.environ.get(\"DB_PASSWORD\"), os.environ.get(\"OTHER\"))'")
    demo = subprocess.Popen([PY, "a2a_min.py", "--port", str(port), "--exec", shows,
                             "--pass-env", "DB_PASSWORD"], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "DB_PASSWORD": "pw", "OTHER": "x"})
    try:
        assert "agent on http://" in demo.stdout.readline()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/message:send", json.dumps({"message": user_message("x")}),
                     {"A2A-Version": "1.0", "Content-Type": "application/json"})
        task = json.loads(conn.getresponse().read())["task"]
        assert artifact_text(task) == "pw None\n"
    finally:
        demo.terminate()
        demo.wait(10)


def test_a_setsid_grandchild_that_keeps_standard_error_does_not_hold_the_turn(tmp_path):
    """The program starts a process in a session of its own (out of reach of
    the group's signals) that keeps its standard error open, then exits: the
    turn still ends, at once, and nothing waits on that pipe."""
    pids = tmp_path / "pid"
    client = serve(program(
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'], "
        "start_new_session=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)\n"
        f"open({str(pids)!r}, 'w').write(str(child.pid))\n"
        "print('done')"), timeout=3)
    task_id = client.result("SendMessage", {"message": user_message("x"), "configuration": {
        "returnImmediately": True}})["task"]["id"]
    pid = pid_in(pids)
    try:
        assert wait_for(lambda: client.result("GetTask", {"id": task_id})["status"]["state"]
                        == "TASK_STATE_COMPLETED", 8), "the turn hangs on standard error"
        assert artifact_text(client.result("GetTask", {"id": task_id})) == "done\n"
    finally:
        os.kill(pid, 9)


def test_return_immediately_past_max_procs_is_refused_server_busy():
    """The README's promise, whatever the configuration: no FAILED task."""
    client = serve(program("import time; time.sleep(1); print('done')"), max_procs=1)
    at_once = {"returnImmediately": True}
    first = client.result("SendMessage", {"message": user_message("a"),
                                          "configuration": at_once})["task"]
    refused = client.error("SendMessage", {"message": user_message("b"), "configuration": at_once})
    assert refused["data"][0]["reason"] == "SERVER_BUSY" and "--max-procs" in refused["message"]
    assert [t["id"] for t in client.result("ListTasks", {})["tasks"]] == [first["id"]]
    assert wait_for(lambda: client.result("GetTask", {"id": first["id"]})["status"]["state"]
                    == "TASK_STATE_COMPLETED")
    again = client.result("SendMessage", {"message": user_message("c"), "configuration": at_once})
    assert wait_for(lambda: client.result("GetTask", {"id": again["task"]["id"]})["status"][
        "state"] == "TASK_STATE_COMPLETED")                  # the reserved slot is used, then freed
    assert client.result("SendMessage", {"message": user_message("d")})["task"]["status"][
        "state"] == "TASK_STATE_COMPLETED"


def test_a_context_id_with_nul_or_of_140_kb_still_starts_the_program():
    client = serve(program("import os; print(os.environ['A2A_CONTEXT_ID'])"))
    seen = {}
    for context_id in ("a\x00b\x1b[2J%", "c" * 140_000 + "1", "c" * 140_000 + "2"):
        task = client.result("SendMessage", {"message": user_message(
            "x", contextId=context_id)})["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
        seen[context_id] = artifact_text(task)[:-1]
    assert seen["a\x00b\x1b[2J%"] == "a%00b%1B[2J%25"               # controls and % escaped
    long = [seen["c" * 140_000 + end] for end in "12"]
    assert all(len(value.encode()) <= 1024 for value in long) and long[0] != long[1]
    assert long[0].startswith("ccc")


def test_a_program_outlives_the_request_thread_that_started_it():
    """PR_SET_PDEATHSIG fires when the *thread* that started a program ends: a
    blocking SendMessage whose turn moves to a worker at blocking_timeout,
    its connection closed, must not take the program with its thread."""
    from harness import Live
    live = Live(a2a_min.Server(a2a_cli.exec_agent(program(
        "import time; print('one', flush=True); time.sleep(1.5); print('two')")),
        blocking_timeout=0.3))
    try:
        answer = live.rpc("SendMessage", {"message": user_message("x")})["result"]["task"]
        assert answer["status"]["state"] == "TASK_STATE_WORKING"
        time.sleep(0.3)                                     # (its thread ended meanwhile)
        assert wait_for(lambda: live.rpc("GetTask", {"id": answer["id"]})["result"]["status"][
            "state"] != "TASK_STATE_WORKING")
        task = live.rpc("GetTask", {"id": answer["id"]})["result"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
        assert artifact_text(task) == "one\ntwo\n"
    finally:
        live.close()


def test_a_silent_program_does_not_hold_a_blocking_answer_past_blocking_timeout():
    """Between outputs is where the deadline is checked; a program that says
    nothing for a while must not hold the blocking SendMessage until it does."""
    client = Client(a2a_min.Server(a2a_cli.exec_agent(program(
        "import time; time.sleep(3); print('late')")), blocking_timeout=0.3))
    started = time.monotonic()
    task = client.result("SendMessage", {"message": user_message("x")})["task"]
    assert time.monotonic() - started < 2.5
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    assert wait_for(lambda: client.result("GetTask", {"id": task["id"]})["status"]["state"]
                    == "TASK_STATE_COMPLETED")
    assert artifact_text(client.result("GetTask", {"id": task["id"]})) == "late\n"


def test_a_turn_canceled_before_it_began_gives_its_slot_back():
    """returnImmediately takes a slot before the task exists; a task canceled
    while its turn waits for a worker (max_workers=1, busy) never runs its
    program, and its slot is free again for the next message."""
    client = Client(a2a_min.Server(a2a_cli.exec_agent(program(
        "import sys, time; text = sys.stdin.read(); time.sleep(1.5 if text == 'slow' else 0); "
        "print(text)"), max_procs=2), max_workers=1))
    at_once = {"returnImmediately": True}
    slow = client.result("SendMessage", {"message": user_message("slow"),
                                         "configuration": at_once})["task"]
    waiting = client.result("SendMessage", {"message": user_message("never"),
                                            "configuration": at_once})["task"]
    assert client.result("CancelTask", {"id": waiting["id"]})["status"]["state"] == \
        "TASK_STATE_CANCELED"
    task = client.result("SendMessage", {"message": user_message("next")})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and artifact_text(task) == "next\n"
    assert wait_for(lambda: client.result("GetTask", {"id": slow["id"]})["status"]["state"]
                    == "TASK_STATE_COMPLETED")


def processes_of(task_ids):
    """The pids of the processes running for these tasks (A2A_TASK_ID in their
    environment, which what a program starts inherits), zombies left out."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if any(f"A2A_TASK_ID={task}".encode() in environ for task in task_ids) and running(name):
            found.append(int(name))
    return found


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux's")
def test_nothing_a_program_started_outlives_its_worker_or_the_server(tmp_path):
    """--workers 2 and a shell program that starts a child in its group and
    one in a session of its own. kill -9 of the worker running it: the shell
    dies with the worker (PR_SET_PDEATHSIG), and both its children with it
    (the supervisor adopts them, as the subreaper, and ends them). A program
    that ended, leaving its session-of-its-own child behind: that child ends
    with the server."""
    import signal
    port = free_port()
    # (It waits for its other child to be in a session of its own, out of the reach of
    # the group's SIGKILL that follows a program's end.)
    shell = (f"read m; up={tmp_path}/$A2A_TASK_ID; "
             "setsid sh -c \"touch $up; exec sleep 45\" </dev/null >/dev/null 2>&1 & "
             "while [ ! -e $up ]; do sleep 0.01; done; [ \"$m\" = stay ] && sleep 45; exit 0")
    server = subprocess.Popen(
        [PY, "a2a_min.py", "--port", str(port), "--workers", "2", "--store",
         str(tmp_path / "tasks.db"), "--exec", f"sh -c '{shell}'"], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    tasks = []
    try:
        assert "Ctrl-C stops" in server.stdout.readline()
        tasks.append(send_at_once(port, "stay")["task"]["id"])
        assert wait_for(lambda: len(processes_of(tasks)) == 3), processes_of(tasks)
        started = processes_of(tasks)
        parents = {parent_of(pid) for pid in started} - set(started)      # the program's
        assert len(parents) == 1 and server.pid not in parents, (started, parents)
        worker = parents.pop()
        os.kill(worker, signal.SIGKILL)
        assert wait_for(lambda: not processes_of(tasks)), "a program's child outlived its worker"
        # A program that leaves a child in a session of its own, then ends.
        tasks.append(send_at_once(port, "go")["task"]["id"])
        assert wait_for(lambda: len(processes_of(tasks[1:])) == 1)
        server.send_signal(signal.SIGTERM)
        server.wait(30)
        assert not processes_of(tasks), "a program's child outlived the server"
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(30)
        for pid in processes_of(tasks):
            os.kill(pid, signal.SIGKILL)
