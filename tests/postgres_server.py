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
                   "-c max_connections=2000")
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


class Bouncer:
    """PgBouncer in front of ``server``, in ``mode`` (session or transaction),
    on 127.0.0.1: ``url`` reaches the same database through it. As root it
    runs as the server's user (PgBouncer refuses to run as root)."""

    def __init__(self, server, mode="session"):
        program = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
        if not os.path.exists(program):
            raise FileNotFoundError("PgBouncer is not on this machine (apt-get install pgbouncer)")
        self.dir = tempfile.mkdtemp(prefix="a2a-pgbouncer-")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        with open(os.path.join(self.dir, "users.txt"), "w") as f:
            f.write('"a2a" ""\n')
        with open(os.path.join(self.dir, "pgbouncer.ini"), "w") as f:
            f.write(f"""[databases]
* = host=127.0.0.1 port={server.port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir =
auth_type = trust
auth_file = {self.dir}/users.txt
pool_mode = {mode}
max_client_conn = 200
default_pool_size = 20
logfile = {self.dir}/log
pidfile = {self.dir}/pid
ignore_startup_parameters = extra_float_digits
""")
        argv = [program, os.path.join(self.dir, "pgbouncer.ini")]
        if server.user:
            entry = pwd.getpwnam(server.user)
            for name in os.listdir(self.dir):
                os.chown(os.path.join(self.dir, name), entry.pw_uid, entry.pw_gid)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
            argv = ["runuser", "-u", server.user, "--"] + argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)     # (runuser and its child)
        import time
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("PgBouncer did not start: "
                                       + self.proc.stderr.read().decode(errors="replace"))
                time.sleep(0.05)
        self.url = f"postgresql://a2a@127.0.0.1:{self.port}/postgres"

    def stop(self):
        import signal
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)
