"""What an install gives: the sdist carries everything its tests need, and the
console commands are there."""

import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from harness import ROOT, need


def test_the_sdist_carries_every_file_of_the_checkout(tmp_path):
    if not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout (an unpacked sdist, say): nothing to compare with")
    need("git", "comparing the sdist with the checkout needs git")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    built = subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta; "
         "print(build_meta.build_sdist(sys.argv[1]))", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    name = built.stdout.split()[-1]
    with tarfile.open(tmp_path / name) as sdist:
        inside = {member.split("/", 1)[1] for member in sdist.getnames() if "/" in member}
    missing = [path for path in tracked if path not in inside and path != ".gitignore"
               and os.path.exists(os.path.join(ROOT, path))]
    assert missing == [], missing
    assert not [p for p in inside if "__pycache__" in p or p.startswith("test-artifacts")]


@pytest.mark.parametrize("command", ["a2a-min", "a2a-min-grpc"])
def test_the_console_commands_are_installed(command):
    script = os.path.join(os.path.dirname(sys.executable), command)
    if not os.path.exists(script):
        script = shutil.which(command)
    assert script, f"{command} is not installed beside {sys.executable} (pip install -e .)"
    done = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=60,
                          cwd="/")
    assert done.returncode == 0 and "--port" in done.stdout, done.stderr


def test_python_m_a2a_min_runs_from_anywhere():
    done = subprocess.run([sys.executable, "-m", "a2a_min", "--help"], capture_output=True,
                          text=True, timeout=60, cwd="/")
    assert done.returncode == 0 and "--access-log" in done.stdout, done.stderr
