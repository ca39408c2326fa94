"""serve --exec: any program as the agent (a process per message), and what
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

PY = sys.executable


def program(code):
    return [PY, "-c", code]


def serve(argv, **options):
    return Client(a2a_min.Server(a2a_min._exec_agent(argv, **options)))


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
    assert chunks[1:] == ["A\n", "B\n"]
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
    import a2a_client
    from harness import Live
    live = Live(a2a_min.Server(a2a_min._exec_agent(program(
        "import sys\nfor line in sys.stdin: print(line, end='', flush=True)"))), timeout=5)
    try:
        out = io.StringIO()
        failed = a2a_client.check(live.url, out=out, full=True)
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
