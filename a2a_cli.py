"""a2a_cli: the a2a-min command line: serve an agent for real, or call one.

``python a2a_min.py`` alone runs the demo agent (its options: --host, --port,
--server, --public-url, --compat, --push-allow and a few more). With this
file beside it, the same command takes what a deployment needs, and the
client's verbs:

    python a2a_min.py --store tasks.db --workers 4        # tasks in SQLite, 4 processes
    python a2a_min.py --store postgresql://...            # or PostgreSQL (a2a_postgres.py)
    python a2a_min.py --tls-cert cert.pem --tls-key key.pem   # HTTPS; kill -HUP reloads them
    python a2a_min.py --exec 'tr a-z A-Z'                 # a program is the agent
    python a2a_min.py --sign-key key.pem --kid k1 --public-url https://...   # a signed card
    python a2a_min.py send http://127.0.0.1:8000/ hello   # call an agent (a2a_client.py)

The installed ``a2a-min`` command is this module's main(). What each flag
does is in ``python a2a_min.py --help``; why, in the sections below.

MIT License. Copyright (c) 2026 the a2a_min authors.
"""

__all__ = ["main", "verbs_main", "exec_agent", "tls_context", "log_stats",
           "VERBS", "EXIT_STATUS"]

import functools
import json
import os
import sys
import threading
import time

if sys.version_info < (3, 10) and __name__ == "__main__":     # (one line, not a traceback)
    sys.exit(f"a2a_cli needs Python 3.10 or newer; this is Python "
             f"{'.'.join(map(str, sys.version_info[:3]))} ({sys.executable})")

import a2a_check
import a2a_client
import a2a_min
from a2a_client import (DEFAULT_LIMITS, Client, ClientError, _Connections, _Printable,
                        _credentials, _curl_printer, _state_name, _text, _tls_flags, fetch_card,
                        verify)
from a2a_min import (A2AError, MutualTlsAuth, ServerBusyError, Server, demo_server,
                     status_update)
# The second tier (a2a_min.COMPANION_API).
from a2a_min import _log


def tls_context(tls):
    """``tls=`` as an ssl.SSLContext (None stays None): {"cert": "server.pem",
    "key": "server.key"} (the key may be in the cert file), and for mutual TLS
    "client_ca": "ca.pem", the CA whose client certificates are accepted, with
    "client_cert": "optional" (the default: a client without one still reads
    the public card, and MutualTlsAuth asks for one where the card says so) or
    "required" (no handshake without one). TLS 1.2 at least, 1.3 when the
    client has it, no renegotiation. A file that cannot be read, or a key that
    does not match, is a ValueError naming the file."""
    if tls is None or not isinstance(tls, dict):
        return tls
    import ssl
    unknown = set(tls) - {"cert", "key", "client_ca", "client_cert"}
    if unknown or "cert" not in tls:
        raise ValueError(f"tls= takes cert, key, client_ca and client_cert (optional or "
                         f"required); got {', '.join(sorted(tls))}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= getattr(ssl, "OP_NO_RENEGOTIATION", 0)
    try:
        context.load_cert_chain(tls["cert"], tls.get("key"))
    except (OSError, ssl.SSLError) as error:
        # (a certificate file without its key reads as a bad file: say so)
        hint = "" if tls.get("key") or not isinstance(error, ssl.SSLError) else (
            " (is its private key in that file? if not, give it: --tls-key FILE)")
        raise ValueError(f"the TLS certificate {tls['cert']}"
                         + (f" and key {tls['key']}" if tls.get("key") else "")
                         + f" cannot be used: {_tls_problem(error)}{hint}") from None
    if tls.get("client_ca"):
        try:
            context.load_verify_locations(tls["client_ca"])
        except (OSError, ssl.SSLError) as error:
            raise ValueError(f"the client CA file {tls['client_ca']} cannot be used: "
                             f"{_tls_problem(error)}") from None
        how = tls.get("client_cert", "optional")
        if how not in ("optional", "required"):
            raise ValueError(f"tls client_cert must be 'optional' or 'required', not {how!r}")
        context.verify_mode = ssl.CERT_REQUIRED if how == "required" else ssl.CERT_OPTIONAL
    return context


def _tls_problem(error):
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, PermissionError):
        return "permission denied"
    return getattr(error, "reason", None) or str(error)


# The client's verbs: ``python a2a_min.py send URL TEXT`` and the others run
# the command line of the companion a2a_client.py (the caller's side).
# -- any program as the agent: serve --exec ------------------------------------------
#
# python a2a_min.py serve --exec 'CMD ARGS' puts a program behind A2A: one
# process per message (a turn), never through a shell (the command is split
# as a shell would split it, with shlex, and run directly). The message's text
# is its standard input, A2A_TASK_ID and A2A_CONTEXT_ID are in its
# environment; what it writes on standard output is the task's one artifact,
# sent on as it comes, a chunk per line (or per --chunk delimiter). It ends
# the task COMPLETED when it exits with 0, FAILED with the last lines of its
# standard error otherwise. What reaches the program is network input: treat
# it as untrusted.
#
# A program lives as long as its turn, never longer. It leads a process
# group of its own, and CancelTask (watched until the program has exited,
# not only while it writes), the turn's timeout, more output than allowed,
# and the server's shutdown once its grace has passed (the agent's close())
# end that group: SIGTERM, then SIGKILL ``stop_grace`` seconds later; it is
# always waited for, so no zombie is left. A server that dies without
# stopping (kill -9 of a worker, a crash) takes its programs too, on Linux:
# each starts with PR_SET_PDEATHSIG, set by util-linux's setpriv(1), which
# then executes the program, and the kernel kills it when its parent dies.
# Two caveats shape how. The kernel's "parent" is the *thread* that forked,
# so every program is started by one thread that lives as long as the
# process (_Programs.start), never by a request's thread, which ends with its
# connection while the turn goes on in a worker. And nothing of ours runs
# between fork and exec (no preexec_fn): Popen can then vfork, which runs no
# fork handler; a forked child of a process serving gRPC ran gRPC's, and
# sometimes crashed (SIGSEGV) before it was the program. Where there is no
# setpriv (not Linux, or no util-linux) a server that dies leaves its
# programs to their timeout. The kernel's signal reaches the program alone;
# its children are reached by the group's signals, and one that leaves the
# group (setsid) by none of these.
# With --workers N the process that forks the workers (a2a_store's
# serve_workers) ends them all: on Linux it adopts what a dead program leaves.
#
# The program sees a small environment, not the server's, which may hold a
# database password (A2A_STORE, say): the names of _EXEC_ENVIRONMENT and
# those --pass-env adds, and A2A_TASK_ID and A2A_CONTEXT_ID, the client's
# text made fit for an environment (_environment_value). Its three pipes are
# served by one selector on the turn's thread (_Pipes): no thread waits on a
# pipe that a process out of reach keeps open. At most ``max_procs`` run at
# once, per process (with --workers N, in each worker); a message past that
# is refused with ServerBusyError before its task exists, since the server
# calls the agent's admit() first, whether or not the client waits.

# What a program's environment keeps of the server's (section "serve --exec").
_EXEC_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")


def exec_agent(argv, *, chunk="\n", timeout=300.0, max_procs=4, max_output=1 << 20,
               stderr_lines=5, pass_env=(), stop_grace=2.0):
    """The agent of serve --exec: run ``argv`` (a list) for each message, as
    above. At most ``max_procs`` at once (a message past that is refused,
    ServerBusyError); ``timeout`` seconds each; ``max_output`` bytes of
    standard output each; ``pass_env``: names of the server's environment
    variables that programs see too; ``stop_grace``: seconds from SIGTERM to
    SIGKILL. The server calls its ``admit(ctx)`` before a new task exists
    (it takes a slot, or refuses) and its ``close()`` when it shuts down."""
    import weakref
    slots = threading.BoundedSemaphore(max_procs)
    programs = _Programs(pass_env, stop_grace)
    reserved = {}            # id(ctx) -> weakref.finalize: slots admit() took, turns not begun

    def take_slot():
        if programs.closed:
            raise ServerBusyError("the server is shutting down; try again shortly")
        if slots.acquire(blocking=False):
            return
        for claim in list(reserved.values()):      # turns canceled before they began: free
            held = claim.peek()
            if held is not None and held[0].cancelled.is_set():
                claim()
        if not slots.acquire(blocking=False):
            raise ServerBusyError(f"all {max_procs} program slots are busy (--max-procs); try "
                                  "again shortly")

    def admit(ctx):
        take_slot()
        # The turn's slot from now on. A turn that never begins gives it back
        # when its context is freed (its task could not be stored, say), or
        # when a slot is wanted and it was canceled while it waited for a
        # worker (the worker may hold its context until its next turn).
        reserved[id(ctx)] = weakref.finalize(ctx, _give_back, reserved, id(ctx), slots)

    def agent(ctx):
        claim = reserved.pop(id(ctx), None)
        if claim is None or claim.detach() is None:    # (None: freed meanwhile, canceled)
            take_slot()
        try:
            yield from _run_program(ctx, argv, chunk, timeout, max_output, stderr_lines,
                                    programs)
        finally:
            slots.release()
    agent.admit = admit
    agent.close = programs.close
    agent.running = programs.running  # (a server that stops at once ends them: _stop_programs)
    return agent


def _give_back(reserved, key, slots):
    reserved.pop(key, None)
    slots.release()


def _run_program(ctx, argv, chunk, timeout, max_output, stderr_lines, programs):
    import subprocess
    proc = programs.start(argv, ctx)
    pipes = _Pipes(proc, (ctx.text or "").encode())
    deadline, pending, total = time.monotonic() + timeout, b"", 0
    late = status_update("TASK_STATE_FAILED",
                         f"the program ran longer than {timeout:g} s and was stopped")
    delimiter = chunk.encode()
    try:
        yield status_update("TASK_STATE_WORKING")
        while True:
            if ctx.cancelled.is_set():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                yield late
                return
            data = pipes.read(min(left, 0.2))
            if data is None:            # silent: a None lets the server check its
                yield None              # blocking_timeout (it emits nothing)
                continue
            total += len(data)
            if total > max_output:
                yield status_update("TASK_STATE_FAILED", f"the program wrote more than "
                                    f"{max_output} bytes and was stopped")
                return
            pending += data
            pieces = pending.split(delimiter) if data else [pending, b""]
            pending = pieces.pop()
            for piece in pieces:
                if piece:
                    yield piece.decode("utf-8", "replace") + (chunk if data else "")
                    if time.monotonic() > deadline:     # (a read may hold many thousands)
                        yield late
                        return
            if not data:
                break
        code = pipes.wait(ctx, deadline)
        if code is None:                           # canceled while it had yet to exit
            return
        if code != 0 and programs.closed:
            yield status_update("TASK_STATE_FAILED", "the server shut down before the program "
                                "finished; send the message again")
        elif code != 0:
            said = "\n".join(pipes.errors.decode("utf-8", "replace").splitlines()[-stderr_lines:])
            said = said or "(nothing on standard error)"
            yield status_update("TASK_STATE_FAILED", f"the program exited with {code}:\n{said}")
    except subprocess.TimeoutExpired:
        yield status_update("TASK_STATE_FAILED", "the program closed its output but did not exit")
    finally:
        pipes.close()
        programs.stop(proc)


class _Programs:
    """The programs an --exec agent runs in this process: how each starts
    (from the launcher thread, in a small environment) and how they stop."""

    def __init__(self, pass_env=(), grace=2.0):
        self.names = _EXEC_ENVIRONMENT + tuple(pass_env)
        self.grace = grace
        self.running = set()                       # Popen objects
        self.closed = False                        # close() was called: no more programs
        self.lock = threading.Lock()
        self.launcher = None                       # (pid, its job queue)

    def start(self, argv, ctx):
        """A Popen running ``argv`` for ``ctx``'s turn, in a group of its own."""
        env = {name: os.environ[name] for name in self.names if name in os.environ}
        env["A2A_TASK_ID"] = _environment_value(ctx.task_id or "")
        env["A2A_CONTEXT_ID"] = _environment_value(ctx.context_id or "")
        with self.lock:
            if self.launcher is None or self.launcher[0] != os.getpid():  # (or a worker, forked)
                from queue import SimpleQueue
                self.launcher = (os.getpid(), SimpleQueue())
                threading.Thread(target=_launch_programs, args=(self.launcher[1],),
                                 name="a2a-exec-launcher", daemon=True).start()
            jobs = self.launcher[1]
        job = [argv, env, threading.Event(), None]
        jobs.put(job)
        job[2].wait()
        if isinstance(job[3], Exception):
            raise job[3]
        proc = job[3]
        with self.lock:
            self.running.add(proc)
            closed = self.closed
        if closed:                                 # (close() came first: it missed this one)
            self.stop(proc)
            raise ServerBusyError("the server is shutting down; try again shortly")
        return proc

    def stop(self, proc):
        _stop(proc, self.grace)
        with self.lock:
            self.running.discard(proc)

    def close(self):
        """Stop every program still running: SIGTERM to each one's group, then
        SIGKILL ``grace`` seconds later (to what is left in the groups too)."""
        import signal
        import subprocess
        with self.lock:
            self.closed = True
            procs = list(self.running)
        _signal_groups(procs, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        for proc in procs:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        _signal_groups(procs, signal.SIGKILL)


def _launch_programs(jobs):
    """The launcher thread: start each program asked for (see above)."""
    import subprocess
    before = _death_signal()
    while True:
        job = jobs.get()
        try:
            job[3] = subprocess.Popen(before + job[0], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=job[1], start_new_session=True)
        except Exception as error:                 # (the turn that asked raises it)
            job[3] = error
        job[2].set()


def _death_signal():
    """What goes before each program's own words so that the kernel kills it
    when the thread that started it dies: util-linux's ``setpriv --pdeathsig
    KILL --`` (Linux's PR_SET_PDEATHSIG), or nothing where there is none."""
    import shutil
    import subprocess
    setpriv = shutil.which("setpriv", path=os.environ.get("PATH", "") + ":/usr/bin:/bin")
    if not sys.platform.startswith("linux") or setpriv is None:
        return []
    words = [setpriv, "--pdeathsig", "KILL", "--"]
    try:                                           # (util-linux before 2.33 has no --pdeathsig)
        subprocess.run(words + ["true"], check=True, timeout=10, env={},
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return []
    return words


def _environment_value(text, limit=1024):
    """``text`` (an id the client chose) as an environment variable can hold
    it: each control character (NUL, which none can hold, included) and "%"
    written %XX; past ``limit`` bytes, cut, and ended with "%~" and a
    SHA-256 digest of the whole, so that two ids never read the same."""
    import re
    value = re.sub("[\x00-\x1f\x7f-\x9f%]", lambda m: f"%{ord(m.group()):02X}", text)
    data = value.encode()
    if len(data) <= limit:
        return value
    import hashlib
    digest = hashlib.sha256(text.encode()).hexdigest()
    return data[:limit - 66].decode("utf-8", "ignore") + "%~" + digest


class _Pipes:
    """A program's three pipes, served together by one selector on its
    turn's thread: the message goes to standard input as the program takes
    it, the last ``tail`` bytes of standard error are kept, standard output
    is read as it comes. No thread waits on a pipe, so none is left waiting
    on one that a process out of reach keeps open, and closing never waits."""

    def __init__(self, proc, message, tail=4096):
        import selectors
        self.proc, self.tail, self.errors = proc, tail, b""
        self.message = memoryview(message)
        self.selector = selectors.DefaultSelector()    # (select.select() stops at fd 1023)
        if message:
            os.set_blocking(proc.stdin.fileno(), False)
            self.selector.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
        self.selector.register(proc.stdout, selectors.EVENT_READ)
        self.selector.register(proc.stderr, selectors.EVENT_READ)

    def read(self, timeout):
        """Standard output's next bytes (b"" once it has ended), or None if
        none came within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.proc.stdout not in self._serve(max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline:
                return None
        data = os.read(self.proc.stdout.fileno(), 65536)
        if not data:
            self.selector.unregister(self.proc.stdout)
        return data

    def wait(self, ctx, deadline):
        """The exit code, once standard output has ended; None if the task is
        canceled first; subprocess.TimeoutExpired past ``deadline``."""
        import subprocess
        step = 0.0005
        while self.proc.poll() is None:
            left = deadline - time.monotonic()
            if ctx.cancelled.is_set():
                return None
            if left <= 0:
                raise subprocess.TimeoutExpired(self.proc.args, 0)
            self._serve(min(step, left))
            step = min(2 * step, 0.05)             # (as Popen.wait polls)
        for _ in range(16):                        # what it wrote last on standard error
            if not self._serve(0):
                break
        return self.proc.returncode

    def _serve(self, timeout):
        """Wait up to ``timeout`` for the pipes; feed standard input and keep
        standard error's tail. Returns the pipes that were ready."""
        ready = [key.fileobj for key, _ in self.selector.select(timeout)]
        if self.proc.stdin in ready:
            try:
                sent = os.write(self.proc.stdin.fileno(), self.message[:65536])
            except BlockingIOError:
                sent = 0
            except OSError:                        # (it exited, or closed it, unread)
                sent = len(self.message)
            self.message = self.message[sent:]
            if not self.message:
                self.selector.unregister(self.proc.stdin)
                self.proc.stdin.close()            # the end of its input
        if self.proc.stderr in ready:
            data = os.read(self.proc.stderr.fileno(), 65536)
            if not data:
                self.selector.unregister(self.proc.stderr)
            self.errors = (self.errors + data)[-self.tail:]
        return ready

    def close(self):
        self.selector.close()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                pipe.close()
            except OSError:
                pass


def _signal_groups(procs, sig):
    for proc in procs:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _stop(proc, grace=2.0):
    """End a program and everything it started (its process group), then reap it."""
    import signal
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                proc.wait(wait)
                break
            except Exception:
                continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)       # (children left behind by a program that exited)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _stop_programs(agent):
    """Kill what serve --exec's agent still runs (each program's process
    group), at once: they run in sessions of their own, so Ctrl-C does not
    reach them, and this process's exit reaches the programs alone (on
    Linux), not what they started."""
    import signal
    _signal_groups(list(getattr(agent, "running", ())), signal.SIGKILL)


def _demo_tls(args, parser):
    """--tls-cert, --tls-key, --tls-client-ca: the SSLContext, or None."""
    if not args.tls_cert:
        given = [flag for flag, value in (("--tls-key", args.tls_key),
                                          ("--tls-client-ca", args.tls_client_ca)) if value]
        if given:
            parser.error(f"{' and '.join(given)} need{'s' if len(given) == 1 else ''} "
                         "--tls-cert FILE")
        return None
    try:
        context = tls_context({"cert": args.tls_cert, "key": args.tls_key,
                                "client_ca": args.tls_client_ca,
                                "client_cert": args.tls_client_cert})
    except ValueError as error:
        parser.exit(2, f"a2a_min: {error}\n")         # (one line: no usage, the file is right)
    _reload_on_sighup(context, args.tls_cert, args.tls_key)
    return context


def _reload_on_sighup(context, cert, key):
    """kill -HUP: load the certificate files again (a renewed certificate),
    for the handshakes from then on; connections open keep theirs. A file
    that cannot be used is logged, and the old certificate stays."""
    import signal
    if not hasattr(signal, "SIGHUP"):
        return

    def reload(*_):
        try:
            context.load_cert_chain(cert, key)
            _log().warning("TLS: reloaded %s", cert)
        except (OSError, ValueError) as error:
            _log().error("TLS: cannot reload %s (%s); the old certificate stays", cert, error)
    signal.signal(signal.SIGHUP, reload)


def _demo_agent_of(args, parser):
    """The demo's agent, or --exec's program, or --echo: (agent, name, description)."""
    if args.exec_command:
        import shlex
        argv = shlex.split(args.exec_command)
        if not argv or args.max_procs < 1 or args.timeout <= 0 or not args.chunk:
            parser.error("--exec needs a command, --max-procs 1 or more, --timeout above 0 "
                         "and a --chunk delimiter")
        import shutil
        if shutil.which(argv[0]) is None:
            sys.exit(f"a2a_min: --exec: no program {argv[0]!r} (not on PATH, or not an "
                     "executable file)")
        return (exec_agent(argv, chunk=args.chunk, timeout=args.timeout,
                           max_procs=args.max_procs, pass_env=args.pass_env),
                f"{os.path.basename(argv[0])} (--exec)", f"The program {argv[0]}, run for each "
                "message: the message on its standard input, its output the answer.")
    if args.echo:
        return (lambda text: text), "echo", "Answers each message with its text."
    return None


def _demo_signer(args, parser):
    """--sign-key FILE --kid KID: a card signer (a2a_signing), or None."""
    if not (args.sign_key or args.kid):
        return None
    missing = [flag for flag, given in (("--sign-key FILE", args.sign_key),
                                        ("--kid KID", args.kid),
                                        ("--public-url URL", args.public_url)) if not given]
    if missing:
        parser.error(f"a signed card also needs {' and '.join(missing)} (a signed card needs "
                     "--sign-key FILE, --kid KID and --public-url URL: the card signed must "
                     "not depend on the request's Host; --public-url is where clients reach "
                     "this server, so it changes with --port)")
    try:
        import a2a_signing
    except ImportError:
        parser.error("--sign-key needs the companion a2a_signing.py beside a2a_min.py (a "
                     "checkout has it)")
    try:
        return a2a_signing.signer_from_pem(args.sign_key, kid=args.kid)
    except a2a_signing.CardSignatureError as error:
        sys.exit(f"a2a_min: --sign-key {args.sign_key}: {error}")


def _parser():
    """The demo's command line (a2a_min._demo_parser) and serve's deployment flags."""
    parser = a2a_min._demo_parser()
    parser.description = "Serve an A2A 1.0 agent (serve is the default verb)."
    parser.epilog = ("Call an agent: %(prog)s {" + ",".join(VERBS) + "} URL ... "
                     "(%(prog)s send --help)")
    parser.add_argument("--store", metavar="FILE|URL", default=os.environ.get("A2A_STORE"),
                        help="keep tasks in this SQLite file (or sqlite: URL), or in "
                             "PostgreSQL (postgresql://...), shared by workers and kept "
                             "across restarts (default: $A2A_STORE, else in memory)")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="N processes on one port (threaded server; needs --store)")
    parser.add_argument("--metrics", nargs="?", const=True, metavar="HOST:PORT",
                        help="serve Prometheus metrics at GET /metrics (with HOST:PORT, there "
                             "instead, without authentication)")
    parser.add_argument("--opentelemetry", action="store_true", help=(
        "make OpenTelemetry spans (a2a_otel.py) with the provider the process set: "
        "opentelemetry-instrument python a2a_min.py --opentelemetry"))
    parser.add_argument("--access-log", nargs="?", const="plain", choices=("plain", "json"),
                        help="print a line for every request to stderr (json: one JSON "
                             "object a line)")
    parser.add_argument("--stats-interval", type=float, default=60.0, metavar="SECONDS",
                        help="log the counters that changed (stats()) this often (default 60; "
                             "0: never)")
    a2a_min._tls_arguments(parser)
    parser.add_argument("--sign-key", metavar="FILE",
                        help="sign the agent card with this private key (PEM: EC P-256, RSA or "
                             "Ed25519; needs --kid and --public-url, and the cryptography "
                             "package)")
    parser.add_argument("--kid", help="with --sign-key: the key's id, which verifiers look it "
                                      "up by")
    parser.add_argument("--jwt-issuer", metavar="URL",
                        help="callers send a JWT from this identity provider (OpenID Connect "
                             "discovery at URL/.well-known/openid-configuration gives its "
                             "keys); the caller is its sub claim (a2a_jwt.py, needs PyJWT: "
                             "pip install 'PyJWT[crypto]')")
    parser.add_argument("--jwt-audience", metavar="AUD",
                        help="with --jwt-issuer: the aud a token must name (this agent's)")
    parser.add_argument("--jwt-scope", action="append", default=[], metavar="SCOPE",
                        help="with --jwt-issuer: a scope every call needs (repeatable)")
    parser.add_argument("--agent", action="append", default=[], metavar="NAME=MODULE:ATTR",
                        help="serve one more agent as the tenant NAME (/NAME/..., its card "
                             "at /NAME/.well-known/agent-card.json, all listed in "
                             "/.well-known/ai-catalog.json): MODULE's ATTR, an a2a_min.Server "
                             "or a function returning one (repeatable)")
    parser.add_argument("--exec", metavar="CMD", dest="exec_command",
                        help="the agent is this program, run for each message (split like a "
                             "shell would, never run by one): the text on its standard input, "
                             "its standard output the artifact")
    parser.add_argument("--chunk", metavar="DELIM", default="\n",
                        help="with --exec: send its output on at each DELIM (default: each line)")
    parser.add_argument("--max-procs", type=int, default=4, metavar="N",
                        help="with --exec: programs running at once, in each worker process "
                             "(default 4)")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                        help="with --exec: how long a program may run (default 300)")
    parser.add_argument("--pass-env", action="append", default=[], metavar="NAME",
                        help="with --exec: the program sees this environment variable of the "
                             "server's too (repeatable; it sees only PATH, HOME, the locale, "
                             "TMPDIR, TZ and A2A_TASK_ID and A2A_CONTEXT_ID otherwise)")
    return parser


def _mounted_agents(args, parser):
    """--agent NAME=MODULE:ATTR ...: [(NAME, Server)], each imported (the
    current directory first) and checked now, not at the first request."""
    import importlib
    agents = []
    for spec in args.agent:
        name, _, target = spec.partition("=")
        module, _, attr = target.partition(":")
        if not (name and module and attr):
            parser.error(f"--agent {spec!r}: write NAME=MODULE:ATTR, e.g. --agent "
                         "travel=travel_agent:server (ATTR: a Server, or a function "
                         "returning one)")
        if "" not in sys.path and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            found = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as error:
            parser.error(f"--agent {spec}: {error}")
        try:
            server = found() if callable(found) and not isinstance(found, Server) else found
        except Exception as error:             # (its traceback is the module's, not ours)
            parser.error(f"--agent {spec}: {module}.{attr}() failed: {error!r}")
        if not isinstance(server, Server):
            parser.error(f"--agent {spec}: {module}.{attr} is not an a2a_min.Server, nor a "
                         f"function returning one (it is {type(server).__name__})")
        agents.append((name, server))
    return agents


def _authenticate(args, parser):
    """The authenticate hook of serve's flags: JwtAuth (--jwt-issuer), MutualTlsAuth
    (--tls-client-ca), or None."""
    if not args.jwt_issuer:
        if args.jwt_audience or args.jwt_scope:
            parser.error("--jwt-audience and --jwt-scope go with --jwt-issuer URL")
        return MutualTlsAuth() if args.tls_client_ca else None
    if not args.jwt_audience:
        parser.error("--jwt-issuer needs --jwt-audience AUD: the aud its tokens name for this "
                     "agent (a token meant for another must not pass)")
    if args.tls_client_ca:
        parser.error("--jwt-issuer and --tls-client-ca are two ways to say who calls: "
                     "choose one")
    try:
        a2a_jwt = a2a_min._companion("a2a_jwt", "--jwt-issuer")
        return a2a_jwt.JwtAuth(issuer=args.jwt_issuer, audience=args.jwt_audience,
                               scopes=args.jwt_scope)
    except (ValueError, ModuleNotFoundError) as error:
        parser.error(f"--jwt-issuer: {error}")


# -- the stats line ----------------------------------------------------------------------
#
# Server.stats() holds the counters behind every limit. A server run from the
# command line logs, once a --stats-interval (a minute), the counters that
# changed since the last line: an idle server says nothing, a refused request
# or an outage shows within the minute. One thread per process does it
# (each worker process starts its own), holding the server weakly.

def log_stats(server, interval=60.0):
    """Log, every ``interval`` seconds, a line on the "a2a_min" logger (INFO)
    with those counters of ``server.stats()`` that changed since the last
    line (the first line has them all). In this process, and in each one
    forked from it (the workers of serve(workers=N))."""
    import weakref
    held = weakref.ref(server)

    def start():
        threading.Thread(target=_stats_lines, args=(held, interval), name="a2a-stats",
                         daemon=True).start()
    start()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=start)


def _stats_lines(held, interval):
    shown = {}
    while True:
        time.sleep(interval)
        server = held()
        if server is None or server.closing.is_set():
            return
        try:
            stats = server.stats()
        except Exception:                          # (a line fails, never the server)
            _log().exception("the stats line failed")
            continue
        flat = {}
        for section in ("store", "refused", "hosts"):
            for key, value in stats[section].items():
                if isinstance(value, dict):
                    flat.update((f"{section}.{key}.{k}", v) for k, v in value.items())
                else:
                    flat[f"{section}.{key}"] = value
        for key in ("live_tasks", "agent_threads"):
            flat[key] = stats[key]
        flat.update((f"push.{k}", v) for k, v in stats["push"].items() if k != "by_caller")
        changed = {k: v for k, v in flat.items() if shown.get(k) != v}
        shown = flat
        del server                                 # (held weakly between lines)
        if changed:
            _log().info("stats: %s", ", ".join(f"{k}={v}" for k, v in sorted(changed.items())))


def _server_options(args):
    """The Server options of the demo's flags and of serve's own."""
    return dict(a2a_min._demo_options(args), access_log=args.access_log,
                metrics=bool(args.metrics),
                tracing="opentelemetry" if args.opentelemetry else True)


def _serve_metrics_apart(args, server):
    """--metrics HOST:PORT: GET /metrics on an address of its own."""
    if args.metrics and args.workers > 1:      # (each process would count its own part)
        sys.exit("--metrics counts the requests of one process: with --workers, scrape "
                 "each worker's own server instead (serve one process per port)")
    if isinstance(args.metrics, str):
        host, _, port = args.metrics.rpartition(":")
        if not port.isdigit():
            sys.exit(f"--metrics {args.metrics}: say HOST:PORT (127.0.0.1:9464)")
        import a2a_metrics
        a2a_metrics.serve_metrics(server, host.strip("[]") or "127.0.0.1", int(port))


def _log_to_stderr(access_log):
    """The log, INFO and up, on stderr (a program that set up logging keeps
    its own); with --access-log, the "a2a_min.access" lines too, timed."""
    import logging
    if not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        _log().addHandler(handler)
        _log().setLevel(logging.INFO)
    if access_log:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(
            "%(message)s" if access_log == "json" else "%(asctime)s %(message)s"))
        access = logging.getLogger("a2a_min.access")
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False


def _what_it_keeps(args, server, tls):
    """The banner's parenthesis: where the tasks are, and what else is on."""
    kept = f"tasks in {args.store}" if args.store else "tasks in memory"
    if args.exec_command:
        kept += f"; each message runs: {args.exec_command}"
    if tls:
        kept += "; TLS" + (f", client certificates ({args.tls_client_cert}) from "
                           + args.tls_client_ca if args.tls_client_ca else "")
    if args.jwt_issuer:
        kept += f"; callers' tokens from {args.jwt_issuer}"
    if server.card.signer is not None:
        kept += f"; card signed ({server.card.signer.header.get('alg')}, kid {args.kid})"
    if args.workers > 1:
        kept += f", {args.workers} worker processes"
    return kept


def main(argv=None):
    """a2a-min [serve] [options]: serve an agent (python a2a_min.py --help);
    a2a-min VERB ...: call one (a2a_client)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # A client's verb after options (--json send URL hi) is the client's too
    # (a2a_client.main puts the verb first).
    verb = next((i for i, word in enumerate(argv) if word in VERBS), None)
    late = bool(verb) and argv[0].startswith("-") and argv[0] not in ("-h", "--help") and \
        argv[verb - 1] not in ("--exec", "--host", "--store", "--kid", "--single-path",
                                "--jwt-scope", "--jwt-audience", "--agent")
    if argv and argv[0] == "serve":
        argv = argv[1:]
    elif argv and (argv[0] in VERBS or late):
        return verbs_main(argv)
    elif argv and not argv[0].startswith("-"):    # (a command line that does not parse: 2)
        print(f"a2a_min: {argv[0]}: the port is an option: {a2a_min._prog()} --port {argv[0]}"
              if argv[0].isdigit() else
              f"a2a_min: unknown verb {argv[0]!r}; the verbs are serve (the default: run "
              f"the demo server) and {', '.join(VERBS)} (call an agent: "
              f"{a2a_min._prog()} send --help)", file=sys.stderr)
        sys.exit(2)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be 1 or more")
    if args.workers > 1 and not args.store:
        parser.error("--workers N needs --store FILE: workers keeping tasks in memory would "
                     "each see only their own")
    if args.workers > 1 and args.server != "threads":
        parser.error("--workers N runs the threaded server (--server threads)")
    try:
        store = args.store and a2a_min.open_store(args.store)
    except (ValueError, RuntimeError, OSError) as error:
        parser.error(f"--store: {error}")
    tls = _demo_tls(args, parser)
    signer = _demo_signer(args, parser)
    try:
        options = dict(_server_options(args), card_signer=signer, store=store,
                       authenticate=_authenticate(args, parser))
        other = _demo_agent_of(args, parser)
        server = demo_server(**options) if other is None else Server(
            other[0], name=other[1], description=other[2], **options)
    except RuntimeError as error:
        parser.error(f"--compat: {error}")
    except ValueError as error:
        parser.error(f"--push-allow: {error}")
    except ModuleNotFoundError as error:       # (--metrics without a2a_metrics.py beside)
        sys.exit(f"a2a_min: {error}")
    for name, mounted in _mounted_agents(args, parser):
        if args.workers > 1 and not mounted.store.shared:
            parser.error(f"--agent {name}=...: its Server keeps its tasks in memory, and "
                         "--workers N workers would each see only their own: give it "
                         "store=a2a_min.open_store(FILE) (a file of its own, or the same)")
        try:
            server.mount(name, mounted)
        except ValueError as error:
            parser.error(f"--agent {name}=...: {error}")
    agent = other and other[0]
    _serve_metrics_apart(args, server)
    _log_to_stderr(args.access_log)
    if args.stats_interval > 0:                # (INFO: on stderr, _log_to_stderr)
        log_stats(server, args.stats_interval)
    host = {"tls": tls}
    if args.workers > 1:
        host["workers"] = args.workers
    try:
        a2a_min._serve_demo(args, server, **host, what="agent" if other else "echo agent",
                            kept=_what_it_keeps(args, server, tls),
                            stop_now=agent and functools.partial(_stop_programs, agent))
    finally:
        if agent:
            _stop_programs(agent)                  # (past the grace: not left running alone)


# -- the client's verbs ------------------------------------------------------------------
#
# ``python a2a_min.py VERB ...`` (and ``a2a-min VERB``) come here for the
# client's verbs, built on a2a_client.py (check: a2a_check.py). Human-readable by default, --json for the answers as they
# came; --curl prints each request as a curl command before it is sent.

VERBS = ("card", "send", "get", "list", "cancel", "watch", "push", "check")

# The exit status of send and watch, by the state the task was left in; a
# task still running (send --immediate), one in a state this version does not
# know (a newer agent's: the client fails open) and a Message answer are 0. Every verb
# exits 1 for an error, 2 for a command line that does not parse, 130 when
# interrupted (Ctrl-C).
EXIT_STATUS = {"TASK_STATE_COMPLETED": 0, "TASK_STATE_FAILED": 1, "TASK_STATE_REJECTED": 1,
               "TASK_STATE_INPUT_REQUIRED": 3, "TASK_STATE_AUTH_REQUIRED": 3,
               "TASK_STATE_CANCELED": 4}


def _state(state):
    """A task state to print: its name without TASK_STATE_ (also when it came as its number);
    one this version does not know as it came (99, PAUSED: a newer agent's)."""
    state = _state_name(state)
    return str("" if state is None else state).replace("TASK_STATE_", "")


def _show_task(task, out):
    status = task.get("status", {})
    print(f"task {task.get('id')}  {_state(status.get('state'))}  context {task.get('contextId')}"
          + (f"  generation {task['generation']}" if "generation" in task else ""), file=out)
    said = _text((status.get("message") or {}).get("parts"))
    if said:                                   # (lines of its own, a program's stderr: indented)
        print("  status: " + said.replace("\n", "\n    "), file=out)
    for artifact in task.get("artifacts") or ():
        name = artifact.get("name") or artifact.get("artifactId")
        print(f"  artifact {name}: {_text(artifact.get('parts'))}", file=out)


def _show_answer(answer, out):
    if "task" in answer:
        _show_task(answer["task"], out)
    elif "message" in answer:
        print(f"message: {_text(answer['message'].get('parts'))}", file=out)
    else:
        print(json.dumps(answer, indent=2), file=out)


def _show_event(stream, event, out):
    mark = f"[{stream.last_event_id}] " if stream.last_event_id is not None else ""
    if "task" in event:
        task = event["task"]
        print(f"{mark}task {task.get('id')} {_state(task.get('status', {}).get('state'))}",
              file=out)
    elif "statusUpdate" in event:
        status = event["statusUpdate"].get("status", {})
        said = _text((status.get("message") or {}).get("parts"))
        print(f"{mark}status {_state(status.get('state'))}" +
              (": " + said.replace("\n", "\n    ") if said else ""), file=out)
    elif "artifactUpdate" in event:
        update = event["artifactUpdate"]
        artifact = update.get("artifact", {})
        name = artifact.get("name") or artifact.get("artifactId")
        text = _text(artifact.get("parts"))
        if not text and update.get("lastChunk"):    # (an empty chunk that only ends it)
            print(f"{mark}artifact {name} (end)", file=out)
        else:       # (a chunk that ends a line, as serve --exec sends them: print ends it)
            print(f"{mark}artifact {name}{' (more)' if update.get('append') else ''}: "
                  f"{text[:-1] if text.endswith(chr(10)) else text}", file=out)
    elif "message" in event:
        print(f"{mark}message: {_text(event['message'].get('parts'))}", file=out)
    out.flush()


def _show_card(card, out):
    print(f"{card.get('name')} {card.get('version', '')}: {card.get('description', '')}", file=out)
    for interface in card.get("supportedInterfaces") or ():
        tenant = f"  tenant {interface['tenant']}" if interface.get("tenant") else ""
        print(f"  {interface.get('protocolBinding'):<10} {interface.get('protocolVersion', ''):<4} "
              f"{interface.get('url')}{tenant}", file=out)
    if not card.get("supportedInterfaces") and card.get("url"):       # a 0.3 card
        print(f"  {card.get('preferredTransport', 'JSONRPC'):<10} {card.get('protocolVersion', '0.3'):<4} "
              f"{card['url']}", file=out)
        for interface in card.get("additionalInterfaces") or ():
            print(f"  {interface.get('transport'):<10} {card.get('protocolVersion', '0.3'):<4} "
                  f"{interface.get('url')}", file=out)
    capabilities = card.get("capabilities") or {}
    print("  capabilities: " + (", ".join(k for k, v in capabilities.items() if v is True)
                                or "none"), file=out)
    for extension in capabilities.get("extensions") or ():
        if isinstance(extension, dict):
            print(f"  extension {extension.get('uri')}"
                  + (" (required)" if extension.get("required") else "")
                  + (f": {extension['description']}" if extension.get("description") else ""),
                  file=out)
    for skill in card.get("skills") or ():
        print(f"  skill {skill.get('id')}: {skill.get('name')} - {skill.get('description', '')}",
              file=out)
    if card.get("securitySchemes"):
        print("  security: " + ", ".join(card["securitySchemes"]), file=out)


def _seconds(text):
    """A --timeout: a number of seconds above 0."""
    import argparse
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0 (say 30)")
    return value




_EXIT_HELP = ("Exit status: 0 done, or (send, watch) the task is in a state this version "
              "does not know (a newer agent's); 1 an error, or (send, watch) the task FAILED or "
              "was REJECTED; 2 a command line that does not parse; 3 (send, watch) the task waits "
              "for input or credentials (INPUT_REQUIRED, AUTH_REQUIRED: send --task ID); 4 "
              "(send, watch) the task was CANCELED; 130 interrupted (Ctrl-C).")


def _verbs_parser():
    import argparse
    common = argparse.ArgumentParser(add_help=False)
    one_line = a2a_min._one_line_errors
    common.add_argument("--json", action="store_true", help="print the answers as they came")
    common.add_argument("--auth", default=os.environ.get("A2A_AUTH"), metavar="VALUE",
                        help="credentials: an Authorization value ('Bearer t0ken') or a header "
                             "('X-API-Key: t0ken'); default $A2A_AUTH")
    common.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                        help="a host (or host:port) besides the one given that may get the "
                             "credentials, and that the card may name on a private address; "
                             "repeatable")
    common.add_argument("--tenant", help="the tenant to address (default: the interface's)")
    common.add_argument("--binding", choices=("jsonrpc", "http+json", "grpc"), type=str.lower,
                        help="the binding to use (default: the card's first that works)")
    common.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                        help="to connect, between two bytes, and for a whole answer (default "
                             f"{DEFAULT_LIMITS['timeout']:g}; check: {a2a_check.CHECK_TIMEOUT:g})")
    common.add_argument("--extension", action="append", default=[], metavar="URI",
                        help="announce an extension (A2A-Extensions); repeatable")
    common.add_argument("--protocol", choices=(a2a_min.PROTOCOL_VERSION,
                                               a2a_min.PREVIEW_VERSION),
                        help="the A2A-Version to speak (1.1: the draft, with generations; "
                             f"default {a2a_min.PROTOCOL_VERSION}, or 1.1 with "
                             "--if-generation and --wait-generation)")
    common.add_argument("--curl", action="store_true",
                        help="print each request as a curl command (to stderr) before sending it")
    common.add_argument("--show-secrets", action="store_true",
                        help="with --curl: print credentials, not $A2A_AUTH")
    common.add_argument("--cacert", metavar="FILE",
                        help="https: trust the agent's certificate if this CA (PEM) issued it")
    common.add_argument("--cert", metavar="FILE",
                        help="https: present this client certificate (mutual TLS)")
    common.add_argument("--key", metavar="FILE", help="its private key (if not in --cert)")
    common.add_argument("-k", "--insecure", action="store_true",
                        help="https: do not check the agent's certificate (testing only)")
    common.add_argument("--card-key", action="append", default=[], metavar="KID=FILE",
                        help="trust this public key (PEM) for card signatures of this kid, and "
                             "refuse a card that does not verify (section 8.4); repeatable")
    parser = argparse.ArgumentParser(
        prog=a2a_min._prog(), description="Call an A2A 1.0 agent (run with no verb, or 'serve', to "
                                    "serve the demo agent).",
        epilog=_EXIT_HELP)
    one_line(parser)
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    card = verbs.add_parser("card", parents=[common], help="show the agent card")
    card.add_argument("url")
    card.add_argument("--extended", action="store_true", help="GetExtendedAgentCard too")
    send = verbs.add_parser("send", parents=[common], help="SendMessage (or stream it)",
                            epilog=_EXIT_HELP)
    send.add_argument("url")
    send.add_argument("text")
    send.add_argument("--stream", action="store_true", help="SendStreamingMessage")
    send.add_argument("--task", metavar="ID", help="continue this task (its next turn)")
    send.add_argument("--context", metavar="ID", help="in this context")
    send.add_argument("--immediate", action="store_true",
                      help="answer at once, without waiting for the agent (returnImmediately)")
    send.add_argument("--if-generation", type=int, metavar="G",
                      help="only if the task is at generation G (A2A 1.1's ifGenerationMatch; "
                           "else TASK_GENERATION_MISMATCH)")
    get = verbs.add_parser("get", parents=[common], help="GetTask")
    get.add_argument("url")
    get.add_argument("id")
    get.add_argument("--history", type=int, metavar="N", help="the last N messages")
    get.add_argument("--wait-generation", type=int, metavar="N",
                     help="answer once the task is past generation N (A2A 1.1's long-poll; "
                          "the agent answers anyway when its wait ends)")
    lister = verbs.add_parser("list", parents=[common], help="ListTasks")
    lister.add_argument("url")
    lister.add_argument("--context", metavar="ID")
    lister.add_argument("--state", metavar="STATE", help="e.g. working, TASK_STATE_COMPLETED")
    lister.add_argument("--page-size", type=int, metavar="N")
    lister.add_argument("--page-token", metavar="TOKEN")
    cancel = verbs.add_parser("cancel", parents=[common], help="CancelTask")
    cancel.add_argument("url")
    cancel.add_argument("id")
    watch = verbs.add_parser("watch", parents=[common], help="SubscribeToTask", epilog=_EXIT_HELP)
    watch.add_argument("url")
    watch.add_argument("id")
    watch.add_argument("--last-event-id", metavar="ID", help="resume after this event")
    checking = verbs.add_parser("check", parents=[common],
                                help="a quick conformance check of an agent (PASS/FAIL/WARN/SKIP)")
    checking.add_argument("url")
    checking.add_argument("--full", action="store_true",
                          help="also streaming, and ListTasks' order and paging (3 more tasks)")
    push = verbs.add_parser("push", help="push notification configs")
    push_verbs = push.add_subparsers(dest="push_verb", required=True, metavar="ACTION")
    create = push_verbs.add_parser("create", parents=[common],
                                   help="CreateTaskPushNotificationConfig")
    create.add_argument("url")
    create.add_argument("task")
    create.add_argument("webhook")
    create.add_argument("--id", metavar="ID", help="the config's id (default: the server's)")
    create.add_argument("--token", help="sent back with each notification")
    for name, help_text in (("get", "GetTaskPushNotificationConfig"),
                            ("delete", "DeleteTaskPushNotificationConfig")):
        sub = push_verbs.add_parser(name, parents=[common], help=help_text)
        sub.add_argument("url")
        sub.add_argument("task")
        sub.add_argument("id")
    listed = push_verbs.add_parser("list", parents=[common], help="ListTaskPushNotificationConfigs")
    listed.add_argument("url")
    listed.add_argument("task")
    for sub in [*verbs.choices.values(), *push_verbs.choices.values()]:
        one_line(sub)
    return parser


def _verb_first(argv):
    """The command line with the verb first: options written before it
    (``--json send URL hi``) go after it (and after push's action), where
    its parser reads them."""
    at = next((i for i, word in enumerate(argv) if word in VERBS), None)
    if not at or not argv[0].startswith("-") or argv[0] in ("-h", "--help"):
        return argv
    verb = at + 1 + (argv[at] == "push" and at + 1 < len(argv) and
                     argv[at + 1] in ("create", "get", "list", "delete"))
    return argv[at:verb] + argv[:at] + argv[verb:]


def _swapped(args):
    """A one-line complaint when the URL and the text of ``send`` are the
    wrong way round (said before the text is looked up as a host name)."""
    text = getattr(args, "text", None)
    if args.verb != "send" or text is None or "://" in args.url:
        return None
    if text.startswith(("http://", "https://")) or (
            " " not in text and text.rpartition(":")[2].split("/")[0].isdigit()):
        import shlex
        return (f"send takes the agent's URL first, then the text: send {shlex.quote(text)} "
                f"{shlex.quote(args.url)}")
    return None


def verbs_main(argv=None, out=None, err=None):
    """The client's command line; the exit status (see EXIT_STATUS: 0, 1 for
    an error, 2 for a command line that does not parse, 130 for Ctrl-C)."""
    out, err = _Printable(out or sys.stdout), _Printable(err or sys.stderr)
    args = _verbs_parser().parse_args(_verb_first(sys.argv[1:] if argv is None else list(argv)))
    swapped = _swapped(args)
    if swapped:
        print(f"error: {swapped}", file=err)
        return 2
    if args.timeout is None:
        args.timeout = a2a_check.CHECK_TIMEOUT if args.verb == "check" else DEFAULT_LIMITS["timeout"]
    secrets = {}
    if args.auth:
        header = next(iter(_credentials({}, args.auth)))
        secrets[header] = "A2A_AUTH"
    try:
        args.tls = _cli_tls(args)
        on_request = _curl_printer(secrets, args.show_secrets, err,
                                   _tls_flags(args.tls)) if args.curl else None
        return _run(args, out, err, on_request)
    except A2AError as error:
        kind = type(error).__name__
        after = getattr(error, "retry_after", None)
        print(f"error: {kind}: {error.message}" + (f" (Retry-After: {after} s)" if after else ""),
              file=err)
        if isinstance(error, a2a_min.AuthenticationRequiredError) and not args.auth and \
                "send -H '" in error.message:         # (the server's hint, for curl)
            print("  (give this command line the credentials with --auth 'Bearer <token>', or "
                  "--auth 'X-API-Key: <key>', or in $A2A_AUTH)", file=err)
        if isinstance(error, a2a_min.AuthenticationRequiredError) and args.auth and \
                error.message.startswith("invalid credentials"):
            print("  (the server refused the credentials --auth gave" + (
                  ", from $A2A_AUTH" if args.auth == os.environ.get("A2A_AUTH") else "")
                  + ": check the token or key, and that it is this agent's)", file=err)
        if isinstance(error, a2a_min.AuthenticationRequiredError) and args.auth and \
                len(args.auth.split()) == 1 and ":" not in args.auth:
            print("  (--auth has one word and no scheme, so the Authorization header sent was "
                  "not 'Bearer <token>': write --auth 'Bearer <token>', or a header of its own: "
                  "--auth 'X-API-Key: <key>')", file=err)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:                     # (| head): the reader has what it wanted
        sys.stdout = None
        return 0
    except Exception as error:                  # a bug here: said in one line, not a traceback
        print(f"error: {type(error).__name__}: {error} (this is a bug in a2a_client; please "
              "report it with the command line, and --curl's output)", file=err)
        return 1


def _card_keys(args):
    """--card-key KID=FILE ... -> {kid: file}, or None."""
    keys = {}
    for given in args.card_key:
        kid, sep, path = given.partition("=")
        if not (sep and kid and path):
            raise ClientError(f"--card-key {given!r}: write it KID=FILE, e.g. "
                              "--card-key key-1=public.pem")
        keys[kid] = path
    return keys or None


def _run(args, out, err, on_request):
    limits = {"timeout": args.timeout, "card_keys": _card_keys(args)}
    if args.verb == "check":
        return 1 if a2a_check.check(args.url, out=out, full=args.full, timeout=args.timeout,
                          tls=args.tls, auth=args.auth, keys=limits["card_keys"],
                          show_secrets=args.show_secrets, allow_hosts=args.allow_host) else 0
    if args.verb == "card":
        card, where = fetch_card(args.url, timeout=args.timeout, on_request=on_request,
                                 _http=_Connections(args.timeout, tls=args.tls))
        if limits["card_keys"]:
            held = verify(card, limits["card_keys"])
            print(f"signature verified: kid {held['kid']}, {held['alg']}" +
                  ("" if held["payload"] == "section 8.4.1" else
                   f" (over the older form: {held['payload']})"), file=err)
            # What is shown is what was verified: unsigned fields are left out, and named.
            # (the signatures are kept: what is printed verifies again)
            signed = dict(held["card"], signatures=card["signatures"])
            unsigned = [k for k in card if k not in signed]
            altered = [k for k in signed if card.get(k) != signed[k]]
            if unsigned or altered:
                print("unsigned, not shown: " + "; ".join(filter(None, (
                    ", ".join(unsigned), altered and "parts of " + ", ".join(altered)))), file=err)
            card = signed
        if args.json and not args.extended:
            print(json.dumps(card, indent=2), file=out)
            return 0
        if args.extended:
            with _client(args, card, where, on_request, limits) as client:
                card = client.extended_card()
        print(json.dumps(card, indent=2), file=out) if args.json else _show_card(card, out)
        return 0
    with _client(args, None, args.url, on_request, limits) as client:
        if args.verb == "send" and args.stream:
            return _follow(client.stream(args.text, task_id=args.task, context_id=args.context,
                                         if_generation=args.if_generation), args, out, err)
        if args.verb == "watch":
            return _follow(client.subscribe(args.id, last_event_id=args.last_event_id), args,
                           out, err)
        if args.verb == "send":
            answer = client.send(args.text, task_id=args.task, context_id=args.context,
                                 immediate=args.immediate, if_generation=args.if_generation)
        elif args.verb == "get":
            answer = {"task": client.get_task(args.id, history_length=args.history,
                                              wait_generation=args.wait_generation)}
        elif args.verb == "cancel":
            answer = {"task": client.cancel_task(args.id)}
        elif args.verb == "list":
            filters = {"contextId": args.context, "pageSize": args.page_size,
                       "pageToken": args.page_token}
            if args.state:
                state = args.state.upper()
                filters["status"] = state if state.startswith("TASK_STATE_") else \
                    "TASK_STATE_" + state
            answer = client.list_tasks(**{k: v for k, v in filters.items() if v is not None})
            if not args.json:
                for task in answer.get("tasks", ()):
                    status = task.get("status", {})
                    print(f"{task.get('id')}  {_state(status.get('state')):<14} "
                          f"{status.get('timestamp', '')}  context {task.get('contextId')}",
                          file=out)
                if answer.get("nextPageToken"):
                    print(f"(more: --page-token {answer['nextPageToken']})", file=out)
                elif not answer.get("tasks"):
                    print("no tasks", file=out)
                return 0
        else:
            answer = _push(client, args)
            if not args.json:
                for config in answer.get("configs", [answer] if answer else []):
                    print(f"{config.get('id')}  task {config.get('taskId')}  {config.get('url')}",
                          file=out)
                if not answer:
                    print("deleted", file=out)
                return 0
        if args.json:
            print(json.dumps(answer.get("task", answer) if args.verb in ("get", "cancel")
                             else answer, indent=2), file=out)
        else:
            _show_answer(answer, out)
    if args.verb == "send":
        task = answer.get("task") or {}
        return _exit_status(task.get("id"), _state_name((task.get("status") or {}).get("state")),
                            args, err)
    return 0


def _exit_status(task_id, state, args, err):
    """send's and watch's exit status, by the state the task was left in; a
    task that waits for the client (3) says the command line that answers it."""
    status = EXIT_STATUS.get(state, 0)
    if status == 3 and task_id:
        import shlex
        options = [*_tls_flags(args.tls)] + (["--binding", args.binding] if args.binding else
                                             []) + (["--tenant", args.tenant] if args.tenant else [])
        print(f"  answer it: {a2a_min._prog()} send {shlex.quote(args.url)} 'your answer' "
              f"--task {shlex.quote(task_id)}{''.join(' ' + shlex.quote(w) for w in options)}",
              file=err, flush=True)
    return status


def _client(args, card, url, on_request, limits):
    bindings = {"jsonrpc": "JSONRPC", "http+json": "HTTP+JSON", "grpc": "GRPC"}
    preview = getattr(args, "if_generation", None) is not None or \
        getattr(args, "wait_generation", None) is not None        # (1.1's fields)
    if preview and args.protocol == a2a_min.PROTOCOL_VERSION:
        raise SystemExit(f"{a2a_min._prog()}: --if-generation and --wait-generation are A2A "
                         f"{a2a_min.PREVIEW_VERSION}'s: leave out --protocol 1.0")
    protocol = args.protocol or (a2a_min.PREVIEW_VERSION if preview else
                                 a2a_min.PROTOCOL_VERSION)
    return Client(card if card is not None else url,
                  binding=bindings.get(args.binding) if args.binding else None, auth=args.auth,
                  tenant=args.tenant, extensions=args.extension, on_request=on_request,
                  tls=args.tls, allow_hosts=args.allow_host, protocol=protocol,
                  card_url=url if card is not None else None, **limits)


def _cli_tls(args):
    """--cacert, --cert, --key, --insecure: the SSLContext, or None (default)."""
    if not (args.cacert or args.cert or args.insecure):
        return None
    return a2a_client.tls_context(args.cacert, args.cert, args.key, insecure=args.insecure)


def _follow(stream, args, out, err):
    """Print a stream's events; the exit status by the state it ended in.
    Interrupted (Ctrl-C) or cut for good, it says how to go on."""
    try:
        with stream:
            for event in stream:
                if args.json:
                    print(json.dumps({"id": stream.last_event_id, "event": event}), file=out,
                          flush=True)
                else:
                    _show_event(stream, event, out)
    except KeyboardInterrupt:
        print("interrupted: the task goes on without you", file=err)
        _say_how_to_go_on(stream, args, err)
        return 130
    except A2AError as error:
        print(f"error: {type(error).__name__}: {error.message}", file=err)
        _say_how_to_go_on(stream, args, err)
        return 1
    return _exit_status(stream.task_id, stream.state, args, err)


def _say_how_to_go_on(stream, args, err):
    """The command lines that follow the task from where the stream stopped
    (SubscribeToTask with Last-Event-ID: the server replays what was
    missed), or cancel it."""
    if stream.task_id is None or stream.state in a2a_min.TERMINAL_STATES:
        return
    import shlex
    prog, url, task = a2a_min._prog(), shlex.quote(args.url), shlex.quote(stream.task_id)
    options = [*_tls_flags(args.tls)] + (["--binding", args.binding] if args.binding else []) \
        + (["--tenant", args.tenant] if args.tenant else [])
    more = "".join(" " + shlex.quote(word) for word in options)
    after = "" if stream.last_event_id is None else \
        f" --last-event-id {shlex.quote(str(stream.last_event_id))}"
    print(f"  follow it: {prog} watch {url} {task}{after}{more}", file=err)
    print(f"  stop it:   {prog} cancel {url} {task}{more}", file=err, flush=True)


def _push(client, args):
    if args.push_verb == "create":
        return client.create_push_config(args.task, args.webhook, config_id=args.id,
                                         token=args.token)
    if args.push_verb == "get":
        return client.get_push_config(args.task, args.id)
    if args.push_verb == "list":
        return client.list_push_configs(args.task)
    return client.delete_push_config(args.task, args.id)


if __name__ == "__main__":
    sys.modules.setdefault("a2a_cli", sys.modules[__name__])
    sys.exit(main())
