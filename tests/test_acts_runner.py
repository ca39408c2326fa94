"""Our ACTS runner (conformance/acts) holds itself to its own self-tests: the
assertion grammar, the gRPC error mapping, the webhook receiver on 127.0.0.1,
the client-test harness, and a gRPC run against a2a_min on 127.0.0.1:0. The
corpus is not here (it is another repository's); CONFORMANCE.md runs it."""

import os
import subprocess
import sys

from harness import ROOT, need


def test_the_runners_self_tests_pass():
    need("yaml", "the ACTS runner reads YAML: pip install PyYAML (the test extra)")
    need("grpc", "the runner's gRPC transport: the grpc extra")
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-s", "conformance/acts/tests", "-v"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    assert "skipped" not in done.stderr.splitlines()[-1], done.stderr[-2000:]   # none skip here
    assert "Ran " in done.stderr and " 0 tests" not in done.stderr
