"""What a newcomer hit walking through the README (issue 50, item 5): the
command line's messages, each one line with its exit status, run as a user
runs them (a subprocess), and the README's own commands."""

import os
import socket
import subprocess
import sys
import threading

import pytest

from harness import ROOT, free_port


def cli(*args, timeout=30, **env):
    """``python3 a2a_min.py ARGS``: (exit status, stdout, stderr)."""
    done = subprocess.run([sys.executable, "a2a_min.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **env})
    return done.returncode, done.stdout, done.stderr


def one_line(err):
    """The error as the command line said it: one line, no traceback, no usage."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err and "usage:" not in err, err
    return lines[0]


def lines_until(stream, wanted, guard=60):
    """Read ``stream``'s lines until one holds ``wanted`` (a hang guard kills
    the wait after ``guard`` seconds); all of them, the last one the match."""
    seen, found = [], threading.Event()

    def read():
        for line in stream:
            seen.append(line)
            if wanted in line:
                found.set()
                return
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(guard)
    assert found.is_set(), seen
    return seen


# -- Major ---------------------------------------------------------------------------------

def test_the_command_line_shows_its_own_info_lines_on_stderr():
    """--stats-interval's line (INFO, like PostgreSQL's "is back") is seen."""
    proc = subprocess.Popen([sys.executable, "a2a_min.py", "--port", "0",
                             "--stats-interval", "0.2"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = lines_until(proc.stderr, "stats: ")[-1]
        assert " INFO stats: " in line and "store.tasks=0" in line, line
    finally:
        proc.terminate()
        proc.wait(15)


def test_the_readmes_sqlite_line_runs_a_test_that_subclasses_task_store():
    """conftest's SQLite TaskStore is a class: a test may subclass it."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_cli_exec.py::test_the_timeout_holds_while_the_output_becomes_events"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env={**os.environ, "A2A_TEST_STORE": "sqlite"})
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:]
