"""A throw-away PostgreSQL server for the tests: initdb in a temporary
directory, listening on 127.0.0.1 only, stopped and removed at the end.

initdb refuses to run as root, so as root the server runs as an unprivileged
user (postgres, made by Debian's package, else nobody) through runuser.
Debian keeps initdb and pg_ctl in /usr/lib/postgresql/VERSION/bin, not always
on PATH: both places are looked in. No binaries: start() returns None and
says why in ``missing``.
"""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile


def binaries():
    """The folder with initdb and pg_ctl, or None."""
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(folder, "initdb")):
            return folder
    found = shutil.which("pg_ctl")
    return os.path.dirname(found) if found and shutil.which("initdb") else None


class PostgresServer:
    """A running PostgreSQL: ``url`` for user a2a and database postgres."""

    def __init__(self, fsync=False):
        folder = binaries()
        if folder is None:
            raise FileNotFoundError("PostgreSQL's initdb and pg_ctl are not on this machine "
                                    "(apt-get install postgresql)")
        self.bin = folder
        self.dir = tempfile.mkdtemp(prefix="a2a-pg-")
        self.user = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    entry = pwd.getpwnam(name)
                except KeyError:
                    continue
                self.user = name
                os.chown(self.dir, entry.pw_uid, entry.pw_gid)
                break
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", data, "-A", "trust", "-U", "a2a", "-N", "-E", "UTF8",
                  "--no-instructions")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} "
                   "-c max_connections=1000")
        if not fsync:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self.options = options
        self.start()
        self.url = f"postgresql://a2a@127.0.0.1:{self.port}/postgres"

    def _run(self, tool, *args):
        argv = [os.path.join(self.bin, tool), *args]
        if self.user:
            argv = ["runuser", "-u", self.user, "--"] + argv
        subprocess.run(argv, check=True, capture_output=True, timeout=60, cwd=self.dir)

    def stop(self):
        try:
            self._run("pg_ctl", "-D", os.path.join(self.dir, "data"), "-m", "immediate", "-w",
                      "stop")
        except (subprocess.SubprocessError, OSError):
            pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self):
        self._run("pg_ctl", "-D", os.path.join(self.dir, "data"), "-w", "-t", "30", "-l",
                  os.path.join(self.dir, "log"), "-o", self.options, "start")

    def halt(self):
        """Stop the server at once (its clients' connections break); start() again."""
        self._run("pg_ctl", "-D", os.path.join(self.dir, "data"), "-m", "immediate", "-w",
                  "stop")
