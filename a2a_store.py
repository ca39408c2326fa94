"""a2a_store: task stores that outlive a process, for a2a_min.

a2a_min.py keeps its tasks in memory (TaskStore: bounded, one process). This
companion keeps them where several processes, and a restart, find them again:

- ``SQLiteStore(path)``: one SQLite file (the standard library's sqlite3),
  shared by the workers of one server or by gunicorn's;
- ``open_store(url)``: the store a location names: a file name or
  ``sqlite:PATH``, or ``postgresql://...`` (the companion a2a_postgres.py and
  psycopg 3);
- the sharing layer every shared store uses: leases on running tasks, the
  watch that brings news of other processes' commits, and the circuit that
  refuses at once while the database is away.

Usage::

    import a2a_min, a2a_store

    server = a2a_min.Server(agent, store=a2a_store.SQLiteStore("tasks.db"))
    a2a_min.serve(server, port=8000, workers=4)

(``a2a_min.SQLiteStore`` and ``a2a_min.open_store`` reach the same names while
this file is beside a2a_min.py.) Every store keeps the contract of a2a_min's
section 4 ("The task store") and its one bounds policy (``_Bounds``): the
tests run one contract suite over every store.

MIT License. Copyright (c) 2026 the a2a_min authors.
"""

__all__ = ["SQLiteStore", "open_store", "serve_workers", "SQLITE_SCHEMA_VERSION"]

# The private names a2a_postgres builds on, besides __all__: what any store
# shared by processes needs (its outage circuit, a connection lent for a
# request, the watch thread, a task's version from its row, an owner's key).
COMPANION_API = ("_Circuit", "_Lent", "_newest", "SQLiteStore._key")

import functools
import json
import os
import sys
import threading
import time
import types
import weakref

import a2a_min
from a2a_min import (A2AError, InternalError, ServerBusyError, TaskStoreFullError,
                     TERMINAL_STATES)
# The second tier (a2a_min.COMPANION_API): the store contract's helpers.
from a2a_min import (_IDLE_STATES, _RECENT, _RECENT_BYTES, _RECENT_DECODED, _Bounds,
                     _StoredEvent, _StoredTask, _call_on, _check_version, _cut_history,
                     _decode_stored, _decoded_size, _dumps, _log, _no_longer_stored,
                     _over_share, _store_full, _too_many_configs, _with_pending)


# =============================================================================
# 1. Keeping tasks in a file: SQLite
# =============================================================================
#
# The store contract of a2a_min.py's section 4, kept in one SQLite file that
# several processes may share (a pre-forking server, or a restart that must
# find its tasks again). It is a companion, not in a2a_min.py, because it is
# plumbing: a reader learning how a request is answered needs the contract
# and TaskStore, not SQL; and it needs only the standard library (sqlite3),
# so two files still make a server that keeps its tasks. Each task is one row of ``tasks``: its JSON as the client
# sees it, and beside it what the store needs without decoding it (owner,
# caller, state, status timestamp, version, sizes). Its stream events,
# webhook configs and lease live in their own tables and go with it. The
# first send of each key (idempotent sends: claim_send) is a row of ``sends``.
#
# Writers. SQLite lets one writer at a time commit. Every write runs in
# BEGIN IMMEDIATE, which takes the write lock first and waits up to
# ``busy_timeout`` for it: a plain BEGIN reads first and fails at once with
# "database is locked" when it then tries to write after another process did
# (python/cpython#124510). Lost updates are prevented by versions: commit()
# writes only over the version it was given, and a writer that lost the race
# gets ConflictError, reads the task again, and retries.
#
# Readers. The file is in WAL mode, so readers never wait for the writer nor
# block it. No read transaction is left open (a stream waiting for events
# polls ``changed()`` and reads again), or the write-ahead log could never be
# folded back into the file and would grow without end. WAL needs memory
# shared between the processes: it cannot work on a network file system,
# and the store refuses to start where SQLite cannot enable it.
#
# Connections. A sqlite3 connection belongs to one thread, and one opened
# before os.fork() must never be used in the child (the two processes would
# share its file locks and cache), so the store keeps one connection per
# (process id, thread), and checks the process id on every use.
#
# Bounds. As in TaskStore: idle tasks expire ``task_ttl`` after they became
# idle, the oldest idle tasks are evicted (a 64th below the bound, 64 rows
# to a statement) when the store or a caller's share is full, and a new task
# is refused when only running tasks are left. A task's size is its JSON and
# that of its kept events: what it costs on disk. Triggers keep the count and
# size of all tasks, and of each caller's, in ``totals`` and ``callers`` as
# rows change: COUNT(*) would read every row on every write.
#
# Times are integers: wall-clock milliseconds (a monotonic clock means
# nothing to another process). Status timestamps are compared as text, which
# is right because the server writes them all as "YYYY-MM-DDTHH:MM:SS.mmmZ".

# The schema, one step per version: step i turns a file of version i into one
# of version i + 1. A file is brought forward at start, in one transaction.
_SQLITE_MIGRATIONS = (
    (   # version 1
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE tasks (
            n INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a task made again is new
            id TEXT NOT NULL UNIQUE,
            owner TEXT NOT NULL,          -- json.dumps((tenant, principal))
            caller TEXT NOT NULL,         -- json.dumps of whom it counts against
            context_id TEXT NOT NULL,
            state TEXT NOT NULL,
            stamp TEXT NOT NULL,          -- status.timestamp, for ListTasks
            idle_ms INTEGER,              -- when it became idle; NULL while an agent works
            version INTEGER NOT NULL,
            next_seq INTEGER NOT NULL,    -- the sequence number of its next event
            first_seq INTEGER NOT NULL,   -- ... of its oldest kept event (next_seq: none)
            event_bytes INTEGER NOT NULL, -- the JSON size of its kept events
            size INTEGER NOT NULL,        -- its JSON size, and event_bytes
            body BLOB NOT NULL)""",
        "CREATE INDEX tasks_by_owner ON tasks (owner, stamp DESC, id DESC)",
        "CREATE INDEX tasks_idle ON tasks (idle_ms) WHERE idle_ms IS NOT NULL",
        "CREATE INDEX tasks_idle_by_caller ON tasks (caller, idle_ms) WHERE idle_ms IS NOT NULL",
        """CREATE TABLE events (task_id TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL,
                                PRIMARY KEY (task_id, seq))""",
        """CREATE TABLE push_configs (task_id TEXT NOT NULL, id TEXT NOT NULL,
                                      body BLOB NOT NULL, UNIQUE (task_id, id))""",
        """CREATE TABLE leases (task_id TEXT PRIMARY KEY, holder TEXT NOT NULL,
                                expires_ms INTEGER NOT NULL) WITHOUT ROWID""",
        """CREATE TABLE callers (caller TEXT PRIMARY KEY, tasks INTEGER NOT NULL,
                                 bytes INTEGER NOT NULL) WITHOUT ROWID""",
        "CREATE TABLE totals (tasks INTEGER NOT NULL, bytes INTEGER NOT NULL)",
        "INSERT INTO totals VALUES (0, 0)",
        """CREATE TRIGGER tasks_added AFTER INSERT ON tasks BEGIN
            INSERT OR IGNORE INTO callers VALUES (new.caller, 0, 0);
            UPDATE callers SET tasks = tasks + 1, bytes = bytes + new.size
                WHERE caller = new.caller;
            UPDATE totals SET tasks = tasks + 1, bytes = bytes + new.size;
        END""",
        """CREATE TRIGGER tasks_resized AFTER UPDATE OF size ON tasks
                WHEN new.size <> old.size BEGIN
            UPDATE callers SET bytes = bytes + new.size - old.size WHERE caller = new.caller;
            UPDATE totals SET bytes = bytes + new.size - old.size;
        END""",
        """CREATE TRIGGER tasks_removed AFTER DELETE ON tasks BEGIN
            UPDATE callers SET tasks = tasks - 1, bytes = bytes - old.size
                WHERE caller = old.caller;
            DELETE FROM callers WHERE caller = old.caller AND tasks = 0;
            UPDATE totals SET tasks = tasks - 1, bytes = bytes - old.size;
            DELETE FROM events WHERE task_id = old.id;
            DELETE FROM push_configs WHERE task_id = old.id;
            DELETE FROM leases WHERE task_id = old.id;
        END""",
    ),
    (   # version 2: a task's push configs count in its size
        "ALTER TABLE tasks ADD COLUMN config_bytes INTEGER NOT NULL DEFAULT 0",
        """CREATE TRIGGER configs_added AFTER INSERT ON push_configs BEGIN
            UPDATE tasks SET config_bytes = config_bytes + length(new.body),
                size = size + length(new.body) WHERE id = new.task_id;
        END""",
        """CREATE TRIGGER configs_changed AFTER UPDATE OF body ON push_configs BEGIN
            UPDATE tasks SET config_bytes = config_bytes + length(new.body) - length(old.body),
                size = size + length(new.body) - length(old.body) WHERE id = new.task_id;
        END""",
        """CREATE TRIGGER configs_removed AFTER DELETE ON push_configs BEGIN
            UPDATE tasks SET config_bytes = config_bytes - length(old.body),
                size = size - length(old.body) WHERE id = old.task_id;
        END""",
        "UPDATE tasks SET config_bytes = coalesce((SELECT sum(length(body)) FROM push_configs "
        "WHERE task_id = tasks.id), 0), size = size + coalesce((SELECT sum(length(body)) FROM "
        "push_configs WHERE task_id = tasks.id), 0)",
    ),
    (   # version 3: fewer pages written by a commit (each is a frame in the log). The
        # totals become the row of caller '' in ``callers`` (one page, while there
        # are few callers), with ``made``, which numbers new tasks (AUTOINCREMENT
        # wrote sqlite_sequence too); one index of idle tasks, with their caller.
        "DROP TRIGGER tasks_added",
        "DROP TRIGGER tasks_resized",
        "DROP TRIGGER tasks_removed",
        "DROP TRIGGER configs_added",
        "DROP TRIGGER configs_changed",
        "DROP TRIGGER configs_removed",
        """CREATE TABLE tasks_3 (
            n INTEGER PRIMARY KEY,        -- above every n before (callers.made): never reused
            id TEXT NOT NULL UNIQUE,
            owner TEXT NOT NULL,          -- json.dumps((tenant, principal))
            caller TEXT NOT NULL,         -- json.dumps of whom it counts against
            context_id TEXT NOT NULL,
            state TEXT NOT NULL,
            stamp TEXT NOT NULL,          -- status.timestamp, for ListTasks
            idle_ms INTEGER,              -- when it became idle; NULL while an agent works
            version INTEGER NOT NULL,
            next_seq INTEGER NOT NULL,    -- the sequence number of its next event
            first_seq INTEGER NOT NULL,   -- ... of its oldest kept event (next_seq: none)
            event_bytes INTEGER NOT NULL, -- the JSON size of its kept events
            config_bytes INTEGER NOT NULL DEFAULT 0, -- the JSON size of its push configs
            size INTEGER NOT NULL,        -- its JSON size, event_bytes and config_bytes
            body BLOB NOT NULL)""",
        "INSERT INTO tasks_3 SELECT n, id, owner, caller, context_id, state, stamp, idle_ms, "
        "version, next_seq, first_seq, event_bytes, config_bytes, size, body FROM tasks",
        "ALTER TABLE callers ADD COLUMN made INTEGER NOT NULL DEFAULT 0",
        "INSERT INTO callers SELECT '', tasks, bytes, max(coalesce((SELECT max(n) FROM tasks), "
        "0), coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'tasks'), 0)) FROM totals",
        "DROP TABLE totals",
        "DROP TABLE tasks",
        "ALTER TABLE tasks_3 RENAME TO tasks",
        # (A new task's entries go at the high end of each, where SQLite's b-tree
        # appends cheaply; ListTasks reads tasks_by_owner backwards, newest first.)
        "CREATE INDEX tasks_by_owner ON tasks (owner, stamp, id)",
        "CREATE INDEX tasks_idle ON tasks (idle_ms, caller) WHERE idle_ms IS NOT NULL",
        """CREATE TRIGGER tasks_added AFTER INSERT ON tasks BEGIN
            INSERT OR IGNORE INTO callers VALUES (new.caller, 0, 0, 0);
            UPDATE callers SET tasks = tasks + 1, bytes = bytes + new.size,
                made = CASE caller WHEN '' THEN max(made, new.n) ELSE 0 END
                WHERE caller IN (new.caller, '');
        END""",
        """CREATE TRIGGER tasks_resized AFTER UPDATE OF size ON tasks
                WHEN new.size <> old.size BEGIN
            UPDATE callers SET bytes = bytes + new.size - old.size
                WHERE caller IN (new.caller, '');
        END""",
        # (What a task cannot have is not looked for: events if it keeps none,
        # configs if their size is 0, a lease if it is idle. Most evicted tasks
        # have none of them.)
        """CREATE TRIGGER tasks_removed AFTER DELETE ON tasks BEGIN
            UPDATE callers SET tasks = tasks - 1, bytes = bytes - old.size
                WHERE caller IN (old.caller, '');
            DELETE FROM callers WHERE caller = old.caller AND tasks = 0;
            DELETE FROM events WHERE old.first_seq < old.next_seq AND task_id = old.id;
            DELETE FROM push_configs WHERE old.config_bytes > 0 AND task_id = old.id;
            DELETE FROM leases WHERE old.idle_ms IS NULL AND task_id = old.id;
        END""",
        """CREATE TRIGGER configs_added AFTER INSERT ON push_configs BEGIN
            UPDATE tasks SET config_bytes = config_bytes + length(new.body),
                size = size + length(new.body) WHERE id = new.task_id;
        END""",
        """CREATE TRIGGER configs_changed AFTER UPDATE OF body ON push_configs BEGIN
            UPDATE tasks SET config_bytes = config_bytes + length(new.body) - length(old.body),
                size = size + length(new.body) - length(old.body) WHERE id = new.task_id;
        END""",
        """CREATE TRIGGER configs_removed AFTER DELETE ON push_configs BEGIN
            UPDATE tasks SET config_bytes = config_bytes - length(old.body),
                size = size - length(old.body) WHERE id = old.task_id;
        END""",
    ),
    (   # version 4: events appended alone (see "A streamed artifact" in "The task
        # store"): ``appended`` says that the task has events after ``next_seq``,
        # which its body lacks, and that its newest version and event are
        # counted from them (_newest); their bytes count in its size
        # once it is written whole again
        "ALTER TABLE tasks ADD COLUMN appended INTEGER NOT NULL DEFAULT 0",
        "DROP TRIGGER tasks_removed",
        """CREATE TRIGGER tasks_removed AFTER DELETE ON tasks BEGIN
            UPDATE callers SET tasks = tasks - 1, bytes = bytes - old.size
                WHERE caller IN (old.caller, '');
            DELETE FROM callers WHERE caller = old.caller AND tasks = 0;
            DELETE FROM events WHERE (old.first_seq < old.next_seq OR old.appended)
                AND task_id = old.id;
            DELETE FROM push_configs WHERE old.config_bytes > 0 AND task_id = old.id;
            DELETE FROM leases WHERE old.idle_ms IS NULL AND task_id = old.id;
        END""",
    ),
    (   # version 5: the traceparent of the turn that made the task (no longer
        # written or read: a column is not dropped, so a file keeps its version)
        "ALTER TABLE tasks ADD COLUMN origin TEXT",
    ),
    (   # version 6: idempotent sends (a2a_min's claim_send): the first send of
        # each key, so that a repeat, in any process, answers as it did
        """CREATE TABLE sends (
            owner TEXT NOT NULL,          -- json.dumps((tenant, principal))
            key TEXT NOT NULL,            -- the messageId, or the Idempotency-Key
            digest TEXT,                  -- of the first's message, beside a reply
            task_id TEXT NOT NULL,        -- the first's task (made or to be made)
            at REAL NOT NULL,             -- when the first came: time.time()
            reply BLOB,                   -- its answer, a Message (JSON), once it has one
            PRIMARY KEY (owner, key))""",
        "CREATE INDEX sends_by_at ON sends (at)",
    ),
)
SQLITE_SCHEMA_VERSION = len(_SQLITE_MIGRATIONS)

# What commit() reads first: the task, the totals, its caller's share, when
# the oldest idle task became idle and who holds the task's lease, in one
# statement.
_SQL_COMMIT_READ = """
    SELECT t.owner, t.state, t.version, t.next_seq, t.first_seq, t.event_bytes, t.size,
           t.idle_ms, s.tasks, s.bytes, c.tasks, c.bytes, t.config_bytes,
           (SELECT min(idle_ms) FROM tasks WHERE idle_ms IS NOT NULL),
           (SELECT holder FROM leases WHERE task_id = ?1),
           CASE WHEN t.appended THEN (SELECT max(seq) FROM events WHERE task_id = ?1) END
    FROM callers AS s LEFT JOIN tasks AS t ON t.id = ?1
    LEFT JOIN callers AS c ON c.caller = coalesce(t.caller, ?2)
    WHERE s.caller = ''"""

# A new task that ends as it begins, inserted in one statement if it fits the
# bounds as they are (else commit() goes the general way, which makes room).
_SQL_INSERT_AT_ONCE = """
    INSERT INTO tasks (n, id, owner, caller, context_id, state, stamp, idle_ms, version,
                       next_seq, first_seq, event_bytes, size, body)
    SELECT (SELECT made FROM callers WHERE caller = '') + t.column8, t.column1, t.column2,
           t.column3, t.column4, t.column5, t.column6, ?, 1, 0, 0, 0, length(t.column7),
           t.column7
    FROM (VALUES ROWS) AS t
    WHERE (SELECT tasks + ? <= ? AND bytes + ? <= ? FROM callers WHERE caller = '')
          AND NOT EXISTS (SELECT 1 FROM tasks WHERE idle_ms < ?)
          AND NOT EXISTS (SELECT 1 FROM (VALUES SHARES) AS g
                          LEFT JOIN callers AS c ON c.caller = g.column1
                          WHERE coalesce(c.tasks, 0) + g.column2 > ?
                             OR coalesce(c.bytes, 0) + g.column3 > ?)"""

# Eviction, oldest idle first, 64 at most to a statement (SQLite as built by
# Debian has no DELETE ... LIMIT). Each DELETE removes exactly the rows its
# SELECT just listed: the same order, in the same write transaction.
_SQL_EXPIRED = ("SELECT id FROM tasks WHERE idle_ms < ?1 AND id <> ?2 "
                "ORDER BY idle_ms, n LIMIT 64")
_SQL_DELETE_EXPIRED = f"DELETE FROM tasks WHERE id IN ({_SQL_EXPIRED})"
_SQL_IDLE = ("FROM tasks WHERE idle_ms IS NOT NULL AND id <> ?1 "
             "ORDER BY idle_ms, n LIMIT ?2")
_SQL_CALLER_IDLE = ("FROM tasks WHERE caller = ?3 AND idle_ms IS NOT NULL "
                    "AND id <> ?1 ORDER BY idle_ms, n LIMIT ?2")


# Idempotent sends (claim_send): a key's record is dead ``window`` seconds
# after its first send; each claim removes the oldest dead ones, 64 at most
# (the one it claims among them, if it is dead).
_SQL_SENDS_EXPIRED = ("DELETE FROM sends WHERE rowid IN (SELECT rowid FROM sends WHERE at < ? "
                      "ORDER BY at LIMIT 64)")
_SQL_SEND_FREED = "DELETE FROM sends WHERE owner = ? AND key = ? AND at < ?"


class SQLiteStore(_Bounds):
    """The task store in an SQLite file, shared by every process that opens it.

    ``path`` is a file name, or an ``sqlite:`` URL: ``sqlite:tasks.db`` and
    ``sqlite:/var/lib/a2a/tasks.db`` name the path after the colon as it is;
    ``sqlite:///tasks.db`` (relative) and ``sqlite:////var/lib/a2a/tasks.db``
    (absolute) are SQLAlchemy's spelling of the same. A new file is created
    readable by its owner only (0600: it holds messages and webhook tokens;
    SQLite gives its -wal and -shm files the same mode). ``durable``: every
    commit reaches the disk before it returns (synchronous=FULL); without
    it, a power cut may lose the last commits but never corrupts the file.
    ``busy_timeout``: seconds a write waits for another process's to finish,
    in all (then ServerBusyError); ``connections``: the most this process opens at
    once (a request waits for one past that), besides the one it writes on;
    ``commit_delay``: seconds a commit waits for other threads' commits to
    join it, when commits of this process have lately come together (see
    _together; 0: never). What only a shared store has: ``lease_ttl``,
    seconds a process's claim on a running task lasts unrenewed;
    ``store_poll``, seconds between two looks for the other processes'
    commits (ten times that while this one follows no task); ``store_threads``,
    the threads an event-loop host lets wait on it. The limits are
    TaskStore's: ``replay_buffer`` and ``replay_buffer_bytes`` bound each
    task's event log.

    A file opened read-only still serves reads; each write then raises
    InternalError. A file that stops taking writes while the store runs (it
    became read-only, its disk is full or failing) is an outage (see
    _Circuit): reads go on, writes are refused at once with ServerBusyError
    while it lasts, and one write every ``probe_every`` seconds tries.
    """

    shared = True                   # other processes may write the same tasks
    appends = True                  # a streamed artifact's chunks may be written alone

    def __init__(self, path, *, durable=False, busy_timeout=5.0, connections=16,
                 commit_delay=0.0005, probe_every=1.0, lease_ttl=30.0, store_poll=0.01,
                 store_threads=8, **limits):
        import sqlite3
        path = os.fspath(path)
        if path.startswith("sqlite:"):
            path = path[len("sqlite:"):]
            if path.startswith("///"):
                path = path[3:]
            elif path.startswith("//"):
                raise ValueError(
                    f"sqlite:{path}: write sqlite:///relative/path.db or sqlite:////absolute/"
                    "path.db (SQLAlchemy's forms), or sqlite:PATH with the path as it is")
        if not path or path == ":memory:" or path.startswith("file:"):
            raise ValueError(f"{path!r}: give the SQLite store a file name (for tasks kept in "
                             "memory, use TaskStore)")
        super().__init__(**limits)
        self.lease_ttl, self.store_poll, self.store_threads = lease_ttl, store_poll, store_threads
        self.path = path
        self.durable = durable
        self.busy_timeout = busy_timeout
        self.commit_delay = commit_delay
        self._pool_lock = threading.Lock()
        self._pool = (None, [])             # (process id, its idle connections)
        self._lendable = (None, None)       # (process id, a semaphore of ``connections``)
        self._writers = (None, None)        # (process id, its _WriteGroup: see _together)
        self.connections = connections
        self._watching = (None, None)       # (process id, the connection changed() asks)
        self._inherited = []                # connections from before a fork: unused, never closed
        self._recent = {}                   # id -> (n, _StoredTask), decoded (see get())
        self._keys = {}                     # owner or caller -> _key() of it
        self._here = threading.local()      # .no_wait: inside not_waiting() on this thread
        self._abandoned = {}                # (owner, key) -> (task id, at): see claim_send
        self._statements = {}               # (rows, callers) -> _SQL_INSERT_AT_ONCE for them (at most 64 x 64)
        self._complained = 0.0              # when a failed write was last logged
        self._circuit = _Circuit(f"the task store {os.path.basename(path)}",
                                 "cannot be written right now", self._probe, probe_every)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise RuntimeError(f"the directory {folder} does not exist: create it, or choose "
                               "another path for the task store")
        try:
            # Created 0600 before SQLite opens it (fchmod: whatever the umask).
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except (FileExistsError, IsADirectoryError):
            _own_file(path)
        except OSError as error:                # (a folder of the system's, a read-only one)
            raise RuntimeError(f"cannot make the file {path} in {folder} "
                               f"({error.strerror.lower()}): choose a folder this user may "
                               "write to for the task store") from None
        else:
            os.fchmod(fd, 0o600)
            os.close(fd)
        self.read_only = not os.access(path, os.W_OK)
        try:
            self._migrate()
        except sqlite3.DatabaseError as error:
            if "not a database" in str(error) or "malformed" in str(error):
                raise RuntimeError(
                    f"{path} is not an SQLite database, or it is damaged ({error}): move it "
                    "aside and start on a new file, or restore it from a backup") from None
            raise

    # -- connections: a few per process, each used by one thread at a time -------
    #
    # A request borrows a connection for one statement or transaction and gives
    # it back (``with self._db() as db``): a thread per client connection does
    # not mean an SQLite connection (two open files) per client connection. At
    # most _IDLE_CONNECTIONS wait idle. A connection opened before os.fork()
    # is never used in the child (the two processes would share its locks),
    # and never closed there either: closing it would drop this process's
    # POSIX locks on the file, those of its own connections too.

    def _db(self):
        """``with self._db() as db``: a connection of this process, lent."""
        return _Lent(self)

    def _borrow(self):
        pid = os.getpid()
        with self._pool_lock:
            owner, idle = self._pool
            if owner != pid:                   # a new process (after a fork)
                self._inherited += idle
                idle = []
                self._pool = (pid, idle)
                self._lendable = (pid, threading.BoundedSemaphore(self.connections))
            lendable = self._lendable[1]
        lendable.acquire()                     # at most ``connections`` lent at once
        with self._pool_lock:
            if idle:
                return idle.pop()
        try:
            return self._connect()
        except BaseException:
            lendable.release()
            raise

    def _give_back(self, db):
        with self._pool_lock:
            owner, idle = self._pool
            mine = owner == os.getpid()
            if mine and len(idle) < _IDLE_CONNECTIONS and not db.in_transaction:
                idle.append(db)
                db = None
        if db is not None:
            db.close()
        if mine:
            self._lendable[1].release()

    def _connect(self):
        import sqlite3
        if self.read_only:
            quoted = self.path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
            db = sqlite3.connect(f"file:{quoted}?mode=ro", uri=True, timeout=self.busy_timeout,
                                 isolation_level=None, check_same_thread=False)
        else:
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                 check_same_thread=False)     # (lent to one thread at a time)
            mode = self._journal_mode(db)
            if mode.lower() != "wal":
                db.close()
                raise RuntimeError(
                    f"{self.path}: SQLite cannot use write-ahead logging there (journal_mode "
                    f"stays {mode}), which several processes need to share the file; a network "
                    "file system (NFS, EFS, SMB) cannot give it: put the file on a local disk")
            db.execute("PRAGMA synchronous=" + ("FULL" if self.durable else "NORMAL"))
        return db

    def _journal_mode(self, db):
        """Put the file in WAL mode (a no-op once it is). Several processes
        opening a new file at once (workers starting) contend for it, and
        SQLite answers "locked" at once rather than waiting: so wait here,
        up to busy_timeout."""
        import sqlite3
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                return db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _write(self):
        """``with self._write() as db:`` one write transaction (BEGIN IMMEDIATE).
        The threads of one process take turns on a lock first: waiting for
        the file's write lock is SQLite's busy handler, which sleeps
        milliseconds at a time; a thread waiting on a lock here wakes as
        soon as the one before it commits."""
        return _SQLiteWrite(self)

    def _together(self, mine):
        """Commit ``mine`` (a _GroupWork) in a write transaction, with those other
        threads of this process make at the same time (group commit): its
        result, or its error. One thread leads: it takes every work waiting
        (at most _GROUP), runs them in one transaction and commits them all
        at once; the others wait, then find their outcome. Most of a commit's cost is the
        commit itself (writing the pages it changed to the write-ahead log:
        two system calls a page), and the works of one group change many of
        the same pages (the totals, the newest end of each index): a group
        of 8 costs about half what 8 single commits cost. A thread alone
        pays nothing for it: its group is itself.

        On a server kept busy by many clients, few commits meet by chance:
        the rest of a request (reading it, the agent, the answer) takes far
        longer than its commit. So while groups have lately held more than
        one commit, a leader first waits ``commit_delay`` for company: on the
        threaded server, 16 clients' SendMessage with a delay of 0.5 ms went
        from about 5,000 to 7,500 a second (the groups from 1.2 to 12
        commits). With one client there is no company and no wait."""
        self._may_wait()
        group = self._writing()
        mine.deadline = time.monotonic() + self.busy_timeout
        with group.lock:
            group.waiting.append(mine)
            lead = not group.leading
            group.leading = True
        if not lead:
            mine.ready.acquire()            # released when it is done, or must lead
            if not mine.leads:
                return mine.outcome()
        evicted = []
        try:
            if group.company > 1.1 and self.commit_delay:
                time.sleep(self.commit_delay)       # commits come together: wait for company
            with group.lock:
                batch = group.waiting[:_GROUP]
                del group.waiting[:_GROUP]
            group.company += (len(batch) - group.company) / 8
            # Each commit waits for a write lock until its own deadline, busy_timeout
            # after it came, however many waited before it (each of them as long).
            deadline = min(work.deadline for work in batch)
            if group.turn.acquire(timeout=max(0.0, deadline - time.monotonic())):
                try:
                    evicted = self._run_group(group, batch, deadline=deadline)
                finally:
                    group.turn.release()
            else:
                for work in batch:
                    work.error = self._locked()
                for work in batch[1:]:
                    work.ready.release()
        finally:
            with group.lock:                # the next waiting thread leads the next group
                if group.waiting:
                    group.waiting[0].leads = True
                    group.waiting[0].ready.release()
                else:
                    group.leading = False
        self._tell_evicted(evicted)
        return mine.outcome()

    def not_waiting(self):
        """``with store.not_waiting():`` the block may read, but a write
        (which may wait for another process's to finish) raises _WouldWait
        before it begins. How a host on an event loop answers a request on
        the loop itself when it needs no write, and runs it again on a store
        thread when it does (_here_unless_it_waits)."""
        return _NotWaiting(self)

    def _may_wait(self, wait=True):
        """Before a write: _WouldWait inside not_waiting(); while the file
        takes no writes, refused at once (or a probe, never on an event loop)."""
        if self._refusing():
            raise _WouldWait()
        if self._circuit.down:
            if not wait:
                raise _WouldWait()
            self._circuit.check()

    def _refusing(self):
        """Whether this thread is inside not_waiting()."""
        return getattr(self._here, "no_wait", False)

    def _probe(self):
        """Whether the file takes writes again (see _Circuit): a write that
        changes nothing (the header's user_version, written again: SQLite
        skips a row written as it was), committed; the store's error if it
        fails."""
        import sqlite3
        if self._refusing():
            raise _WouldWait()              # (it may wait for a lock: not on an event loop)
        group = self._writing()
        with group.turn:
            db = self._group_db(group)
            try:
                db.execute("BEGIN IMMEDIATE")
                version = db.execute("PRAGMA user_version").fetchone()[0]
                db.execute(f"PRAGMA user_version = {int(version)}")
                db.execute("COMMIT")
            except sqlite3.Error as error:
                try:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                except sqlite3.Error:       # the connection is in no state to go on
                    group.db = None
                    db.close()
                raise self._failed(error) from None

    def _writing(self):
        """This process's _WriteGroup (a new one after a fork: the parent's
        locks and connection are not the child's to use)."""
        pid, group = self._writers
        if pid != os.getpid():
            with self._pool_lock:
                pid, group = self._writers
                if pid != os.getpid():
                    if group is not None:
                        self._inherited += [db for db in (group.db, group.now) if db]
                    group = _WriteGroup()
                    self._writers = (os.getpid(), group)
        return group

    def _run_group(self, group, batch, wait=True, deadline=None):
        """One transaction of _together's (or commit_many's), with ``group.turn``
        held: each work in ``batch`` gets its outcome (result or error), and
        all but the first (the leader's own) are woken. A work that refuses
        (an A2AError) must have written nothing; any other error fails the
        transaction, and so every work in it. A work alone runs outside a
        transaction: one statement is a transaction of its own, and a work
        that needs more begins one (BEGIN IMMEDIATE). ``wait`` false: on the
        connection that never waits for another process's write lock
        (group.now); if one is held, _WouldWait, with nothing written.
        Returns the ids of the tasks evicted to make room for the group's
        new ones (_room_for), once committed; each work's own evictions
        are its own (see _committed). ``deadline``: when to stop waiting for
        another process's write lock (else busy_timeout from now)."""
        import sqlite3
        evicted = []
        try:
            db = self._group_db(group, wait)
            if wait:
                self._wait_until(group, db, deadline)
            try:
                if len(batch) > 1:
                    db.execute("BEGIN IMMEDIATE")
                # The new tasks that end as they begin, in one statement. If they
                # do not fit, room is made for all of them at once, and they try
                # again; if they still do not fit (or one's id exists), the first
                # goes the general way (which says what is wrong), and so on.
                new = [work for work in batch if work.at_once is not None]
                if new and not self._insert_at_once(db, new):
                    evicted = self._room_for(db, new)
                    while new and not self._insert_at_once(db, new):
                        self._run_work(db, new.pop(0))
                for work in batch:
                    if work.at_once is None:
                        self._run_work(db, work)
                if db.in_transaction:
                    db.execute("COMMIT")
                group.unchecked += len(batch)
            except BaseException as error:
                try:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                except Exception:           # the connection is in no state to go on
                    if wait:
                        group.db = None
                    else:
                        group.now = None
                    db.close()
                if not wait and isinstance(error, sqlite3.OperationalError) and \
                        ("locked" in str(error) or "busy" in str(error)):
                    raise _WouldWait() from None        # another process writes: nothing done
                raise
        except BaseException as error:      # the transaction failed: every work in it did
            evicted = []                    # (and its evictions were undone)
            failure = self._failed(error) if isinstance(error, sqlite3.DatabaseError) else error
            for work in batch:
                work.result, work.error = None, failure
            if not isinstance(error, Exception):
                raise
        finally:
            for work in batch[1:]:          # (the first is the leader's own)
                work.ready.release()
        return evicted

    def _group_db(self, group, wait=True):
        """The connection this process commits on, with ``group.turn`` held
        (opened the first time): ``wait`` false, the one that never waits for
        another process's write lock."""
        db = group.db if wait else group.now
        if db is None:
            db = self._connect()
            db.execute(f"PRAGMA cache_size = -{_WRITER_CACHE_KIB}")
            if wait:                # (the watch checkpoints long before: see checkpoint())
                db.execute(f"PRAGMA wal_autocheckpoint = {_LATE_CHECKPOINT}")
                group.db, group.waits = db, None
            else:
                db.execute("PRAGMA busy_timeout = 0")
                db.execute("PRAGMA wal_autocheckpoint = 0")
                group.now = db
        return db

    def _wait_until(self, group, db, deadline):
        """Have ``db`` (group.db) wait for another process's write lock until
        ``deadline`` at most (None: busy_timeout from now). SQLite's busy
        timeout counts from each statement that waits, so writes queued in
        this process behind one that waited would each wait it whole again;
        a writer waits busy_timeout in all, whatever waited before it. (Set
        only when it changes by more than a few milliseconds: a statement.)"""
        wait = self.busy_timeout if deadline is None else deadline - time.monotonic()
        ms = max(0, int(wait * 1000))
        if group.waits is None or not group.waits - 20 <= ms <= group.waits:
            db.execute(f"PRAGMA busy_timeout = {ms}")
            group.waits = ms

    def _locked(self):
        """The error of a write that waited busy_timeout for a lock."""
        return ServerBusyError(f"the task store stayed locked by another process for "
                               f"{self.busy_timeout:g} s; try again shortly")

    @staticmethod
    def _run_work(db, work):
        try:
            work.result = work.work(db, *work.args)
        except A2AError as error:           # (refused before it wrote anything)
            work.error = error

    def _insert_at_once(self, db, works):
        """Insert the new tasks of ``works`` that end as they begin (a
        SendMessage answered at once) in one statement, if all of them fit the
        bounds as they are: no eviction due, no bound reached, no task of
        their ids. Returns whether it did (else each goes commit's general
        way, which makes room, or says what is wrong). One statement for a
        group, not one each: each statement lets go of Python's lock and must
        wait to take it back, behind the threads that serve other requests."""
        import sqlite3
        now = int(time.time() * 1000)
        callers = {}
        values = []
        for k, work in enumerate(works, 1):
            values += work.at_once
            values.append(k)                # its number: ``made`` and k
            share = callers.setdefault(work.at_once[2], [0, 0])
            share[0] += 1
            share[1] += len(work.at_once[6])
        shares = []
        for caller, (count, size) in callers.items():
            shares += (caller, count, size)
        total = sum(share[1] for share in callers.values())
        sql = self._statements.get((len(works), len(callers)))
        if sql is None:
            sql = self._statements[len(works), len(callers)] = (
                _SQL_INSERT_AT_ONCE
                .replace("ROWS", ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * len(works)))
                .replace("SHARES", ", ".join(["(?, ?, ?)"] * len(callers))))
        try:
            done = db.execute(sql, [now] + values + [
                len(works), self.max_tasks, total, self.max_bytes, now - self.task_ttl * 1000]
                + shares + [self.max_tasks_per_caller, self.max_bytes_per_caller]).rowcount
        except sqlite3.IntegrityError:
            return False                    # a task of one of those ids: the general way
        if done != len(works):
            return False
        for work in works:
            work.result = (None, None)      # (commit's: no event, none refused)
        return True

    def _room_for(self, db, works):
        """Make room for the new tasks of ``works`` (see _insert_at_once), all
        of them but those whose id is taken (they will be refused): each
        caller's share, then the store's bounds, down to a 64th below them,
        as far as idle tasks allow (a refusal is left to the general way).
        Returns the ids of the tasks evicted. Making room for one task at a
        time would evict nothing for the first few (each fits alone) and
        then, when one does not, only as much as that one needs: the rest of
        the group would go the general way one by one."""
        if not db.in_transaction:
            db.execute("BEGIN IMMEDIATE")
        ids = [work.at_once[0] for work in works]
        taken = {row[0] for row in db.execute(
            f"SELECT id FROM tasks WHERE id IN ({', '.join('?' * len(ids))})", ids)}
        now = int(time.time() * 1000)
        shares = {}
        for work in works:
            if work.at_once[0] not in taken:
                share = shares.setdefault(work.at_once[2], [0, 0])
                share[0] += 1
                share[1] += len(work.at_once[6])
        evicted = []
        for caller, (count, size) in shares.items():
            try:
                self._make_room(db, "", count, size, caller, now, evicted)
            except A2AError:            # what was evicted stays evicted
                pass
        return evicted

    def _failed(self, error):
        """The A2AError for an SQLite error: read-only file, full disk, a lock
        held past busy_timeout, a damaged file. The client is told what
        happened without the path; the log says where, and what to do."""
        text = str(error)
        name = os.path.basename(self.path)
        outage = not self.read_only         # (a file opened read-only is no outage: it is so)
        if "malformed" in text or "not a database" in text:
            problem, fix = "is damaged", ("stop the server, move the file aside and restore "
                                          "it from a backup (or start on a new file)")
            outage = False
        elif "readonly" in text or "read-only" in text:
            problem, fix = "is read-only", ("make the file and its directory writable by the "
                                            "server's user, or use another file")
        elif "full" in text:
            problem, fix = "is on a full disk", ("free space on that disk, or lower "
                                                 "max_store_bytes")
        elif "locked" in text or "busy" in text:
            return self._locked()
        elif "disk I/O error" in text or "unable to open" in text:
            problem, fix = "cannot be written", "look at the disk and the file system"
        else:
            problem, fix = "failed", "look at the server log"
            outage = False
        if outage:                          # said once by the circuit, answered SERVER_BUSY
            self._circuit.opened(f"{self.path} {problem}: {fix}; {text}")
            return self._circuit.refusal(f"{problem} right now")
        now = time.monotonic()
        if now - self._complained > 60:       # once a minute: a full disk is not to fill the log
            self._complained = now
            _log().error("task store %s %s: %s (%s)", self.path, problem, fix, text)
        return InternalError(f"the task store {name} {problem}: the server's operator must "
                             f"{fix}", metadata={"store": name})

    def _migrate(self):
        """Bring the file to SQLITE_SCHEMA_VERSION (one transaction), or refuse it."""
        with self._db() as db:
            version = self._schema_version(db)
        if version == SQLITE_SCHEMA_VERSION:
            return
        if self.read_only:
            raise RuntimeError(
                f"{self.path} is read-only and has schema version "
                f"{version}, not {SQLITE_SCHEMA_VERSION}: make it "
                "writable once, so that it can be brought forward")
        with self._write() as db:
            # Read again under the write lock: another process may have just done it.
            for step in _SQLITE_MIGRATIONS[self._schema_version(db):]:
                for statement in step:
                    db.execute(statement)
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                       (str(SQLITE_SCHEMA_VERSION),))

    def _schema_version(self, db):
        """The file's schema version (0: a new file); a newer one than this
        code knows is refused."""
        version = 0
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row else 0
        if version > SQLITE_SCHEMA_VERSION:
            raise RuntimeError(
                f"{self.path} has schema version {version}, newer than version "
                f"{SQLITE_SCHEMA_VERSION} of this a2a_min: run the a2a_min that wrote it (or a "
                "newer one), or start on a new file")
        return version

    # -- tasks ---------------------------------------------------------------------

    def get(self, task_id, owner):
        """The task with this id if ``owner`` owns it, else None; with .json,
        .version and .next_seq (see _StoredTask). A task read before is
        decoded again only if it changed: the row's body is not even fetched
        when its version (and its row number ``n``, new for a task made
        again) is the one decoded last."""
        hit = self._recent.get(task_id)
        n, version = (hit[0], hit[1].version) if hit is not None else (0, 0)
        with self._db() as db:
            row = db.execute(
                "SELECT n, version, next_seq, CASE WHEN n = ? AND version = ? THEN NULL ELSE "
                "body END, appended FROM tasks WHERE id = ? AND owner = ?",
                (n, version, task_id, self._key(owner))).fetchone()
            if row is not None and row[4]:
                return self._with_appended(db, task_id, owner)
        if row is None:
            return None
        if row[3] is None:
            return hit[1]                       # (an event comes with a new version)
        task = _StoredTask.decode(row[3])
        task.version, task.next_seq = row[1], row[2]
        if len(row[3]) <= _RECENT_BYTES and _decoded_size(row[3]) <= _RECENT_DECODED:
            recent = self._recent
            if len(recent) >= _RECENT:             # the oldest goes
                try:
                    recent.pop(next(iter(recent)), None)
                except (RuntimeError, StopIteration):   # another thread changed it meanwhile
                    pass
            recent[task_id] = (row[0], task)
        return task

    def _with_appended(self, db, task_id, owner):
        """get() of a task with events appended alone (see "A streamed
        artifact" in "The task store"), on ``db``: its row and those events,
        read in one read transaction, and applied."""
        db.execute("BEGIN")
        try:
            row = db.execute("SELECT version, next_seq, body FROM tasks WHERE id = ? "
                             "AND owner = ?", (task_id, self._key(owner))).fetchone()
            if row is None:
                return None
            updates = [_decode_stored(body)["artifactUpdate"] for (body,) in db.execute(
                "SELECT body FROM events WHERE task_id = ? AND seq >= ? ORDER BY seq",
                (task_id, row[1]))]
        finally:
            db.execute("COMMIT")
        task = _with_pending(_decode_stored(row[2]), updates)
        task.version, task.next_seq = _newest(row[0], row[1], row[1] + len(updates) - 1)
        return task

    def commit(self, task, owner, version, event=None, caller=None, holder=None,
               derived=False):
        """Write ``task`` over ``version`` (0: a new task), and append ``event``
        to its log, atomically; ``holder`` (of a running task) takes its lease
        for lease_ttl, and an idle task's lease ends. Returns (JSON as stored,
        new version, the event's sequence number or None). See the store
        contract: ``derived``, only the event is written (the JSON returned
        is None)."""
        work = self._commit_work(task, owner, version, event, caller, holder, derived)
        return self._committed(work, self._together(work))

    def commit_many(self, calls, wait=True):
        """commit(*args) for each argument tuple of ``calls``, in one
        transaction: the outcome of each, its result or the A2AError that
        refused it. ``wait`` false: rather than wait for a write lock (this
        process's, or another's), raise _WouldWait, having written nothing.
        How an event loop commits what its turns ended with in one pass
        (_LoopCommits)."""
        self._may_wait(wait)
        outcomes, works = [None] * len(calls), []
        for i, args in enumerate(calls):
            try:
                works.append((i, self._commit_work(*args)))
            except Exception as error:       # (a task that cannot be encoded, say)
                outcomes[i] = error
        group = self._writing()
        deadline = time.monotonic() + self.busy_timeout
        if wait:
            if not group.turn.acquire(timeout=self.busy_timeout):
                raise self._locked()
        elif not group.turn.acquire(blocking=False):
            raise _WouldWait()
        evicted = []
        try:
            if works:
                evicted = self._run_group(group, [work for _, work in works], wait, deadline)
        finally:
            group.turn.release()
        self._tell_evicted(evicted)
        for i, work in works:
            try:
                outcomes[i] = self._committed(work, work.outcome())
            except A2AError as error:
                outcomes[i] = error
        return outcomes

    def tidy(self):
        """Evict ahead of need, from the watch thread (which calls it when the
        store changed, at most every ``store_poll``): the expired tasks, and the oldest idle ones while the
        store, or a caller's share, is within a 64th of its bounds (down to a
        32nd below), at most 256 to a transaction (a few milliseconds: the
        pages of the id index that evicted tasks touch are shared by more of
        them than in batches of 64). A commit then finds room
        and goes its one-statement way (_insert_at_once), instead of evicting
        while its client waits. Returns how many tasks it evicted."""
        deadline = int(time.time() * 1000) - self.task_ttl * 1000
        gone = 0
        while True:
            with self._db() as db:
                oldest = db.execute("SELECT min(idle_ms) FROM tasks WHERE idle_ms IS NOT "
                                    "NULL").fetchone()[0]
                if oldest is None:
                    return gone                 # nothing may be evicted
                full = db.execute(
                    "SELECT caller, tasks, bytes FROM callers WHERE caller = '' AND (tasks > ? "
                    "OR bytes > ?) OR caller <> '' AND (tasks > ? OR bytes > ?) LIMIT 1",
                    (self.max_tasks - (self.max_tasks >> 6), self.max_bytes - (self.max_bytes >> 6),
                     self.max_tasks_per_caller - (self.max_tasks_per_caller >> 6),
                     self.max_bytes_per_caller - (self.max_bytes_per_caller >> 6))).fetchone()
            if oldest >= deadline and full is None:
                return gone
            evicted = []
            with self._write() as db:
                if oldest < deadline:
                    evicted = [row[0] for row in db.execute(_SQL_EXPIRED, (deadline, ""))]
                    db.execute(_SQL_DELETE_EXPIRED, (deadline, ""))
                elif full[0] == "":
                    self._evict_down(db, "", None, full[1], full[2],
                                     self.max_tasks - (self.max_tasks >> 6),
                                     self.max_bytes - (self.max_bytes >> 6), evicted, batches=4)
                else:
                    self._evict_down(db, "", full[0], full[1], full[2],
                                     self.max_tasks_per_caller - (self.max_tasks_per_caller >> 6),
                                     self.max_bytes_per_caller - (self.max_bytes_per_caller >> 6),
                                     evicted, batches=4)
            self._tell_evicted(evicted)
            if not evicted:
                return gone
            gone += len(evicted)

    def checkpoint(self):
        """Fold the write-ahead log back into the file if this process has
        committed much since the last time. The watch thread calls it: the
        connections that commit leave it to the watch (a checkpoint waits
        for the disk, and an event loop's connection must not; a thread's
        does it itself only past _LATE_CHECKPOINT pages, if no watch did).
        This process's writers are held off meanwhile, so that the log is
        folded whole and starts again from its beginning, instead of growing
        while writers keep adding to it."""
        group = self._writing()
        if group.unchecked < _CHECKPOINT_AFTER or self._circuit.down:
            return
        import sqlite3
        with group.turn:
            group.unchecked = 0
            try:
                self._group_db(group).execute("PRAGMA wal_checkpoint(PASSIVE)")
            except sqlite3.DatabaseError as error:
                raise self._failed(error) from error

    def _commit_work(self, task, owner, version, event=None, caller=None, holder=None,
                     derived=False):
        """What commit() will write, ready to be committed (a _GroupWork);
        ``derived``: only the event (its body is None)."""
        task, event = _cut_history(task, event, self.max_history)
        body = None if derived else _dumps(task)    # raises on what cannot be stored
        if event is None:
            event_body = None
        elif type(event) is _StoredEvent:
            event_body = event.json                 # (encoded already: _TurnWriter._counted)
        elif event.get("task") is task and len(event) == 1:
            event_body = b'{"task":' + body + b"}"      # not encoded twice
        else:
            event_body = _dumps(event)
        owner_key = self._key(owner)
        caller_key = owner_key if caller is None else self._key(caller)
        status = task["status"]
        at_once = None
        if version == 0 and event_body is None and status["state"] in _IDLE_STATES:
            at_once = (task["id"], owner_key, caller_key, task.get("contextId", ""),
                       status["state"], status.get("timestamp", ""), body)
        return _GroupWork(self._commit_in, (task, owner_key, caller_key, version, body,
                                            event_body, holder, []), at_once)

    def _committed(self, work, result):
        """commit()'s answer, once ``work`` was committed with ``result``."""
        seq, refused = result
        self._tell_evicted(work.args[-1])
        if refused is not None:
            raise refused
        return work.args[4], work.args[3] + 1, seq

    def _commit_in(self, db, task, owner_key, caller_key, version, body, event_body, holder,
                   evicted):
        """commit()'s transaction, on ``db`` (in a write transaction that may
        hold other threads' commits too: see _together). Returns (the event's
        sequence number or None, the TaskStoreFullError that refused the task
        or None: what was evicted to make room stays evicted)."""
        task_id = task["id"]
        state = task["status"]["state"]
        now = int(time.time() * 1000)
        if not db.in_transaction:
            db.execute("BEGIN IMMEDIATE")
        if body is None:
            return self._append_in(db, task_id, owner_key, version, event_body)
        refused = seq = None
        (stored_owner, stored_state, stored_version, next_seq, first_seq, event_bytes,
         old_size, idle_ms, tasks, size_all, caller_tasks, caller_bytes, config_bytes,
         oldest_idle, leased, newest) = db.execute(_SQL_COMMIT_READ,
                                                   (task_id, caller_key)).fetchone()
        new = stored_owner is None
        if newest is not None and newest >= next_seq:       # events appended alone
            event_bytes += db.execute("SELECT sum(length(body)) FROM events WHERE task_id = ? "
                                      "AND seq >= ?", (task_id, next_seq)).fetchone()[0]
            stored_version, next_seq = _newest(stored_version, next_seq, newest)
        _check_version(task_id, None if new else (stored_owner == owner_key, stored_state,
                                                  stored_version), version)
        if new:
            next_seq = first_seq = event_bytes = old_size = 0
        kept = first_seq
        if event_body is not None:
            seq = next_seq
            next_seq += 1
            first_seq, event_bytes = self._kept(db, task_id, next_seq, first_seq,
                                                event_bytes + len(event_body))
        size = len(body) + event_bytes + (config_bytes or 0)
        grows = size - old_size
        caller_tasks, caller_bytes = caller_tasks or 0, caller_bytes or 0
        if (tasks + new > self.max_tasks or size_all + grows > self.max_bytes
                or caller_tasks + new > self.max_tasks_per_caller
                or caller_bytes + grows > self.max_bytes_per_caller
                or oldest_idle is not None and oldest_idle < now - self.task_ttl * 1000):
            try:
                self._make_room(db, task_id, new, grows, caller_key, now, evicted)
            except TaskStoreFullError as error:
                refused = error       # what was evicted stays evicted, as in TaskStore
        if refused is None:
            if state in _IDLE_STATES:
                idle_ms = now if idle_ms is None else idle_ms
            else:
                idle_ms = None
            if idle_ms is not None:
                if leased is not None:
                    db.execute("DELETE FROM leases WHERE task_id = ?", (task_id,))
            elif holder is not None:
                db.execute("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)",
                           (task_id, holder, now + int(self.lease_ttl * 1000)))
            self._write_row(db, new, task, version, (owner_key, caller_key, idle_ms,
                            next_seq, first_seq, event_bytes, size, body))
            if event_body is not None:
                db.execute("INSERT INTO events (task_id, seq, body) VALUES (?, ?, ?)",
                           (task_id, seq, event_body))
            if first_seq > kept:
                db.execute("DELETE FROM events WHERE task_id = ? AND seq < ?",
                           (task_id, first_seq))
        return seq, refused

    def _append_in(self, db, task_id, owner_key, version, event_body):
        """commit()'s transaction for an event alone (``derived``): the task's
        row is not written, but for saying ``appended`` once (a row is
        written whole, its JSON too: at every chunk, that would cost the
        square of them again). The bounds are not looked at: the events
        count in the task's size once it is written whole again, which its
        writer does before they weigh more than it (_Channel.publish)."""
        row = db.execute("SELECT owner, state, version, next_seq, appended, CASE WHEN "
                         "appended THEN (SELECT max(seq) FROM events WHERE task_id = ?1) END "
                         "FROM tasks WHERE id = ?1", (task_id,)).fetchone()
        stored_version, seq = _newest(row[2], row[3], row[5]) if row else (0, 0)
        _check_version(task_id, row and (row[0] == owner_key, row[1], stored_version), version)
        if not row[4]:
            db.execute("UPDATE tasks SET appended = 1 WHERE id = ?", (task_id,))
        db.execute("INSERT INTO events (task_id, seq, body) VALUES (?, ?, ?)",
                   (task_id, seq, event_body))
        return seq, None

    def _key(self, value):
        """_key(value), remembered: an owner's is asked for on every commit."""
        try:
            return self._keys[value]
        except KeyError:
            if len(self._keys) >= 1024:
                self._keys.clear()
            key = self._keys[value] = _key(value)
            return key
        except TypeError:                   # (an owner that cannot be a dict's key)
            return _key(value)

    def _kept(self, db, task_id, next_seq, first_seq, event_bytes):
        """The log's bounds once its oldest events go while it is past one
        (the new event, not yet in the table, always stays): the new (first
        kept seq, bytes of the events kept)."""
        if next_seq - first_seq <= self.replay_buffer and event_bytes <= self.replay_buffer_bytes:
            return first_seq, event_bytes
        oldest = db.execute("SELECT seq, length(body) FROM events WHERE task_id = ? ORDER BY seq",
                            (task_id,))
        for old_seq, old_bytes in oldest:
            if next_seq - first_seq <= self.replay_buffer and \
                    event_bytes <= self.replay_buffer_bytes:
                break
            first_seq, event_bytes = old_seq + 1, event_bytes - old_bytes
        oldest.close()
        return first_seq, event_bytes

    @staticmethod
    def _write_row(db, new, task, version, row):
        """INSERT or UPDATE the task's row (``row``: owner, caller, idle_ms,
        next_seq, first_seq, event_bytes, size, body)."""
        owner_key, caller_key, idle_ms, next_seq, first_seq, event_bytes, size, body = row
        status = task["status"]
        if new:
            db.execute("INSERT INTO tasks (n, id, owner, caller, context_id, state, stamp, "
                       "idle_ms, version, next_seq, first_seq, event_bytes, size, body) "
                       "VALUES ((SELECT made + 1 FROM callers WHERE caller = ''), "
                       "?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)",
                       (task["id"], owner_key, caller_key, task.get("contextId", ""),
                        status["state"], status.get("timestamp", ""), idle_ms, next_seq,
                        first_seq, event_bytes, size, body))
        else:
            db.execute("UPDATE tasks SET context_id = ?, state = ?, stamp = ?, idle_ms = ?, "
                       "version = ?, next_seq = ?, first_seq = ?, event_bytes = ?, size = ?, "
                       "body = ?, appended = 0 WHERE id = ?",
                       (task.get("contextId", ""), status["state"], status.get("timestamp", ""),
                        idle_ms, version + 1, next_seq, first_seq, event_bytes, size, body,
                        task["id"]))

    def _tell_evicted(self, evicted):
        for gone in evicted:
            self._recent.pop(gone, None)
            if self.on_evict:
                self.on_evict(gone)

    # (the steps of _Bounds._make_room, in SQL within commit's transaction:
    # ``db``; times in milliseconds)

    def _expire(self, db, now, task_id, evicted):
        deadline = now - self.task_ttl * 1000
        while True:                                 # expired, oldest first
            batch = [row[0] for row in db.execute(_SQL_EXPIRED, (deadline, task_id))]
            if batch:
                db.execute(_SQL_DELETE_EXPIRED, (deadline, task_id))
                evicted += batch
            if len(batch) < 64:
                break

    def _held(self, db, caller):
        return db.execute(
            "SELECT s.tasks, s.bytes, coalesce(c.tasks, 0), coalesce(c.bytes, 0) FROM callers AS s "
            "LEFT JOIN callers AS c ON c.caller = ? WHERE s.caller = ''", (caller,)).fetchone()

    def _idle_batch(self, db, task_id, caller):
        if caller is None:
            return db.execute("SELECT id, size " + _SQL_IDLE, (task_id, 64)).fetchall()
        return db.execute("SELECT id, size " + _SQL_CALLER_IDLE, (task_id, 64, caller)).fetchall()

    def _evict(self, db, task_ids, evicted):
        db.execute(f"DELETE FROM tasks WHERE id IN ({','.join('?' * len(task_ids))})",
                   task_ids)                        # (its events go with it: a trigger)
        evicted += task_ids

    def delete(self, task_id):
        """Forget a task, its events, configs and lease (no error if unknown)."""
        with self._write() as db:
            db.execute("DELETE FROM tasks WHERE id = ?", (task_id,))    # and its events: trigger
            db.execute("DELETE FROM push_configs WHERE task_id = ?", (task_id,))
            db.execute("DELETE FROM leases WHERE task_id = ?", (task_id,))
        self._recent.pop(task_id, None)

    def events(self, task_id, after=-1):
        """(oldest kept seq, [(seq, event), ...] with seq > after), or None if
        the task is not stored. One statement: one consistent snapshot."""
        with self._db() as db:
            rows = db.execute(
                "SELECT t.first_seq, e.seq, e.body FROM tasks AS t LEFT JOIN events AS e "
                "ON e.task_id = t.id AND e.seq > ? WHERE t.id = ? ORDER BY e.seq",
                (after, task_id)).fetchall()
        if not rows:
            return None
        return rows[0][0], [(seq, _StoredEvent.decode(body)) for _, seq, body in rows
                            if seq is not None]

    @property
    def live_tasks(self):
        """The class of a Server's live tasks on this store (SharedLiveTasks,
        "Sharing a store between processes" below): what a shared store gives
        the server that uses it."""
        return SharedLiveTasks

    def changed(self):
        """A number that changes when another connection (another process, or
        a thread of this one) committed: PRAGMA data_version, of a connection
        kept for it (the number means something only on one connection)."""
        with self._pool_lock:
            pid, db = self._watching
            if pid != os.getpid():
                db = self._connect()
                self._watching = (os.getpid(), db)
            return db.execute("PRAGMA data_version").fetchone()[0]

    def list(self, owner, *, context_id=None, status=None, after=None, cursor=None, limit=50):
        """One page of the owner's tasks, newest status first: as TaskStore.list.
        The count and the page are read in one read transaction."""
        where, args = "owner = ?", [self._key(owner)]
        if context_id:
            where += " AND context_id = ?"
            args.append(context_id)
        if status:
            where += " AND state = ?"
            args.append(status)
        if after:
            where += " AND stamp >= ?"
            args.append(after)
        page_where, page_args = where, list(args)
        if cursor is not None:
            page_where += " AND (stamp, id) < (?, ?)"
            page_args += [cursor[0], cursor[1]]
        with self._db() as db:
            db.execute("BEGIN")
            try:
                total = db.execute("SELECT count(*) FROM tasks WHERE " + where,
                                   args).fetchone()[0]
                rows = db.execute("SELECT stamp, id, body, CASE WHEN appended THEN next_seq "
                                  "END FROM tasks WHERE " + page_where
                                  + " ORDER BY stamp DESC, id DESC LIMIT ?",
                                  page_args + [limit + 1])
                page, size, more = [], 0, False
                for stamp, task_id, body, since in rows:
                    size += len(body)
                    if len(page) == limit or page and size > self.max_page_bytes:
                        more = True
                        break
                    page.append((stamp, task_id, body, since))
                rows.close()
                appended = {task_id: [_decode_stored(event)["artifactUpdate"] for (event,) in
                                      db.execute("SELECT body FROM events WHERE task_id = ? "
                                                 "AND seq >= ? ORDER BY seq", (task_id, since))]
                            for _, task_id, _, since in page if since is not None}
            finally:
                db.execute("COMMIT")
        tasks = [json.loads(body) if since is None else
                 _with_pending(json.loads(body), appended[task_id])
                 for _, task_id, body, since in page]
        return tasks, total, ((page[-1][0], page[-1][1]) if more else None)

    def heads(self, task_ids):
        """{task id: (version, state)} of those of ``task_ids`` still stored
        (the version get() would say). How a process's store watch finds
        which of the tasks it follows changed, in one statement (not one
        read per stream)."""
        found = {}
        task_ids = list(task_ids)
        with self._db() as db:
            for i in range(0, len(task_ids), 500):
                chunk = task_ids[i:i + 500]
                found.update((task_id, (_newest(version, next_seq, newest)[0], state)) for
                             task_id, version, next_seq, newest, state in db.execute(
                    "SELECT id, version, next_seq, CASE WHEN appended THEN (SELECT max(seq) "
                    "FROM events WHERE task_id = tasks.id) END, state FROM tasks WHERE id IN "
                    f"({', '.join('?' * len(chunk))})", chunk))
        return found

    def stats(self):
        """What the store holds: tasks, bytes, idle tasks and callers."""
        with self._db() as db:
            tasks, size, idle, callers = db.execute(
                "SELECT tasks, bytes, (SELECT count(*) FROM tasks WHERE idle_ms IS NOT NULL), "
                "(SELECT count(*) FROM callers WHERE caller <> '') FROM callers "
                "WHERE caller = ''").fetchone()
        return {"tasks": tasks, "bytes": size, "idle": idle, "callers": callers,
                "max_tasks": self.max_tasks, "max_bytes": self.max_bytes,
                **self._circuit.stats()}

    # -- push notification configs: stored with the task, deleted with it -------------

    def put_config(self, task_id, config, max_configs):
        """Insert, or replace by config["id"] (keeping its place in the order);
        TaskNotFoundError if the task is gone (evicted since it was read). Its
        bytes count in the task's size (the configs_* triggers), within the
        bounds: past one, idle tasks are evicted as for a commit, or the
        config is refused (CallerLimitError, TaskStoreFullError)."""
        body = _dumps(config)
        evicted = []
        with self._write() as db:
            row = db.execute("SELECT caller FROM tasks WHERE id = ?", (task_id,)).fetchone()
            if row is None:
                raise _no_longer_stored(task_id)
            count, known, old = db.execute(
                "SELECT count(*), max(id = ?), max(CASE WHEN id = ? THEN length(body) END) "
                "FROM push_configs WHERE task_id = ?",
                (config["id"], config["id"], task_id)).fetchone()
            grows = len(body) - (old or 0)
            size, share = db.execute(
                "SELECT s.bytes, coalesce(c.bytes, 0) FROM callers AS s LEFT JOIN callers AS c "
                "ON c.caller = ? WHERE s.caller = ''", (row[0],)).fetchone()
            if not known and count >= max_configs:
                raise _too_many_configs(task_id, count)
            if size + grows > self.max_bytes or share + grows > self.max_bytes_per_caller:
                self._make_room(db, task_id, 0, grows, row[0], int(time.time() * 1000), evicted)
            if known:
                db.execute("UPDATE push_configs SET body = ? WHERE task_id = ? AND id = ?",
                           (body, task_id, config["id"]))
            else:
                db.execute("INSERT INTO push_configs (task_id, id, body) VALUES (?, ?, ?)",
                           (task_id, config["id"], body))
        self._tell_evicted(evicted)             # (a refused config evicted nothing: rolled back)

    def get_config(self, task_id, config_id):
        with self._db() as db:
            row = db.execute("SELECT body FROM push_configs WHERE task_id = ? AND id = ?",
                             (task_id, config_id)).fetchone()
        return None if row is None else json.loads(row[0])

    def configs(self, task_id):
        """The task's configs, in the order they were first put."""
        with self._db() as db:
            rows = db.execute("SELECT body FROM push_configs WHERE task_id = ? ORDER BY rowid",
                              (task_id,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def delete_config(self, task_id, config_id):
        with self._write() as db:
            db.execute("DELETE FROM push_configs WHERE task_id = ? AND id = ?",
                       (task_id, config_id))

    # -- leases: which process runs a task's agent ------------------------------------
    #
    # A running task's lease names the process whose agent works on it. That
    # process renews its leases while it lives; a lease that ran out is a task
    # whose process died, which another process may take over (or fail).

    def renew(self, holder):
        """Extend every lease ``holder`` has by ``lease_ttl`` from now."""
        with self._write() as db:
            db.execute("UPDATE leases SET expires_ms = ? WHERE holder = ?",
                       (int((time.time() + self.lease_ttl) * 1000), holder))

    def expired(self):
        """[(task id, owner)] of the running tasks whose lease ran out."""
        with self._db() as db:
            rows = db.execute(
                "SELECT l.task_id, t.owner FROM leases AS l JOIN tasks AS t ON t.id = l.task_id "
                "WHERE l.expires_ms < ? AND t.idle_ms IS NULL",
                (int(time.time() * 1000),)).fetchall()
        return [(task_id, tuple(json.loads(owner))) for task_id, owner in rows]

    # -- idempotent sends: a send's key, for every process (a2a_min's claim_send) ------

    # A SendMessage is answered on an event loop's thread when it needs no
    # write that may wait (not_waiting, "a shared store under an event
    # loop"), and its claim is a write: there it is made on the connection
    # that never waits (_now), or the request goes to a store thread
    # (_WouldWait) before anything is written. A request that claimed and
    # then goes to a thread all the same (a later write would wait) runs
    # again from the start, and must not find its own claim: the claims of
    # a not_waiting block that ends so are abandoned, and the claim of the
    # run again puts its record over theirs. settle_send inside the block
    # (a refusal; the reply of an agent whose turn ended within the request)
    # never waits either: if it would, it is done on a thread of its own.

    def claim_send(self, owner, key, task_id, window):
        """None the first time ``owner`` sends ``key`` within ``window`` seconds
        (recorded, with the ``task_id`` it makes or continues); for a repeat,
        the first's (task id, reply, digest). One write transaction (with
        other threads' commits: _together), so that of the processes sending
        one key at once exactly one is first."""
        owner_key, now = self._key(owner), time.time()  # (wall-clock: processes must agree)
        args = (owner_key, key, task_id, window, now)
        block = getattr(self._here, "claims", None) if self._refusing() else None
        if block is not None:
            first = self._now(self._claim_in, *args)
            if first is None:
                block.append([owner_key, key, task_id, now, False])
        else:
            mine = self._abandoned.pop((owner_key, key), None)
            try:
                first = self._together(_GroupWork(self._claim_in, args + (mine,), None))
            except BaseException:
                if mine is not None:
                    self._abandoned[owner_key, key] = mine
                raise
        if first is not None and first[1] is not None:
            first[1] = json.loads(first[1])
        return first and tuple(first)

    @staticmethod
    def _claim_in(db, owner_key, key, task_id, window, now, abandoned=None):
        """claim_send's transaction, on ``db`` (in a group's, or its own);
        ``abandoned``: (task id, at) of this key's record if it is one this
        process abandoned (see above)."""
        if not db.in_transaction:
            db.execute("BEGIN IMMEDIATE")
        db.execute(_SQL_SENDS_EXPIRED, (now - window,))
        db.execute(_SQL_SEND_FREED, (owner_key, key, now - window))
        if abandoned is not None:
            db.execute("DELETE FROM sends WHERE owner = ? AND key = ? AND task_id = ? AND at = ? "
                       "AND reply IS NULL", (owner_key, key) + abandoned)
        if db.execute("INSERT OR IGNORE INTO sends (owner, key, task_id, at) VALUES (?, ?, ?, ?)",
                      (owner_key, key, task_id, now)).rowcount:
            return None
        return list(db.execute("SELECT task_id, reply, digest FROM sends WHERE owner = ? AND "
                               "key = ?", (owner_key, key)).fetchone())

    def settle_send(self, owner, key, reply, digest=None):
        """The first send of ``key`` answered with the Message ``reply``, kept
        for its repeats with ``digest``, its message's (or, None, was refused:
        the key is free again)."""
        owner_key = self._key(owner)
        if reply is None:
            statement = ("DELETE FROM sends WHERE owner = ? AND key = ?", (owner_key, key))
        else:
            statement = ("UPDATE sends SET reply = ?, digest = ? WHERE owner = ? AND key = ?",
                         (_dumps(reply), digest, owner_key, key))
        block = getattr(self._here, "claims", None) if self._refusing() else None
        if block is None:
            self._together(_GroupWork(_execute, statement, None))
            return
        try:
            self._now(_execute, *statement)
        except (_WouldWait, A2AError):
            if reply is not None:
                _on_a_thread(self._together, _GroupWork(_execute, statement, None))
                return
            for claim in block:             # (freed as the block ends: _after_not_waiting)
                if claim[:2] == [owner_key, key]:
                    claim[4] = True

    def _after_not_waiting(self, claims, would_wait):
        """A not_waiting block that claimed sends ends: if it ends for a write
        that would wait, its claims are abandoned (its request runs again,
        on a store thread, and claims again over them); else those it could
        not free are freed on a thread."""
        for owner_key, key, task_id, at, freed in claims:
            if would_wait:
                if len(self._abandoned) >= 1024:    # (a run again that never came)
                    try:
                        self._abandoned.pop(next(iter(self._abandoned)), None)
                    except (RuntimeError, StopIteration):   # (another thread changed it)
                        pass
                self._abandoned[owner_key, key] = (task_id, at)
            elif freed:
                _on_a_thread(self._together, _GroupWork(_execute, (
                    "DELETE FROM sends WHERE owner = ? AND key = ? AND task_id = ? AND at = ? "
                    "AND reply IS NULL", (owner_key, key, task_id, at)), None))

    def _now(self, work, *args):
        """``work(db, *args)`` in a write transaction on the connection that
        never waits (group.now), committed: its result; _WouldWait, with
        nothing written, if a write lock is held (this process's or
        another's), or the file is known to take no writes."""
        import sqlite3
        if self._circuit.down:
            raise _WouldWait()
        group = self._writing()
        if not group.turn.acquire(blocking=False):
            raise _WouldWait()
        try:
            db = self._group_db(group, wait=False)
            try:
                db.execute("BEGIN IMMEDIATE")
                result = work(db, *args)
                db.execute("COMMIT")
                group.unchecked += 1
                return result
            except BaseException as error:
                try:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                except Exception:           # the connection is in no state to go on
                    group.now = None
                    db.close()
                if isinstance(error, sqlite3.OperationalError) and \
                        ("locked" in str(error) or "busy" in str(error)):
                    raise _WouldWait() from None
                if isinstance(error, sqlite3.DatabaseError):
                    raise self._failed(error) from None
                raise
        finally:
            group.turn.release()


def _execute(db, sql, args):
    """One statement, as a _GroupWork (a transaction of its own if alone)."""
    db.execute(sql, args)


def _on_a_thread(write, work):
    """``write(work)`` on a thread of its own: a write that must not wait
    where it was asked for, and need not be done before the answer. A
    failure is logged."""
    def run():
        try:
            write(work)
        except Exception:
            _log().exception("a send's record could not be written")
    threading.Thread(target=run, name="a2a-send", daemon=True).start()


# Idle connections an SQLiteStore keeps per process (more are closed when given back).
_IDLE_CONNECTIONS = 8


# The most commits one group commit of an SQLiteStore takes (see _together),
# and how many a process makes before its watch checkpoints (checkpoint()).
_GROUP = 64
_CHECKPOINT_AFTER = 100
_WRITER_CACHE_KIB = 8192        # the page cache of each connection commits write on
_LATE_CHECKPOINT = 1000         # pages in the log past which a thread's commit checkpoints


class _WriteGroup:
    """A process's writers of one SQLiteStore: the works waiting to be
    committed and whether a thread is leading a group (see _together);
    ``turn``, held by whoever writes (a group's leader, commit_many, a
    _SQLiteWrite, a checkpoint); and the connections they write on."""

    __slots__ = ("lock", "waiting", "leading", "turn", "db", "now", "unchecked", "company",
                 "waits")

    def __init__(self):
        self.lock = threading.Lock()
        self.waiting = []
        self.leading = False
        self.turn = threading.Lock()
        self.db = None          # the connection groups write on
        self.now = None         # ... and the one an event loop writes on (never waits)
        self.unchecked = 0      # commits since the last checkpoint
        self.company = 1.0      # how many commits a group has held lately (a moving mean)
        self.waits = None       # db's busy_timeout in ms, if _wait_until set it


class _GroupWork:
    """One thread's commit in a group: what to run, and its outcome. ``ready``
    is held until the leader releases it (done, or lead the next group)."""

    __slots__ = ("work", "args", "at_once", "ready", "leads", "result", "error", "deadline")

    def __init__(self, work, args, at_once):
        self.work, self.args, self.at_once = work, args, at_once
        self.deadline = None        # when it stops waiting for a write lock (_together)
        self.ready = threading.Lock()
        self.ready.acquire()
        self.leads = False
        self.result = self.error = None

    def outcome(self):
        if self.error is not None:
            raise self.error
        return self.result


def _own_file(path):
    """An existing store file (and its -wal, -shm) must be this user's, and
    readable by nobody else: one planted by someone else (in /tmp, say) would
    hand them every message and webhook token written to it."""
    import stat
    for name in (path, path + "-wal", path + "-shm"):
        try:
            info = os.stat(name)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(info.st_mode):
            raise RuntimeError(f"{name} is not a file (a directory?): give the store a file "
                               "name, such as tasks.db")
        if info.st_uid != os.geteuid():
            raise RuntimeError(f"{name} belongs to another user (uid {info.st_uid}): the task "
                               "store must be a file of the server's own user; use another path")
        if info.st_mode & 0o077 and os.access(name, os.W_OK):
            os.chmod(name, 0o600)
            _log().warning("%s was readable by others; its mode is now 0600 (it holds "
                           "messages and webhook tokens)", name)


def _key(value):
    """An owner or caller as the text the SQLite store compares: JSON, keys
    sorted; what JSON cannot hold (a principal object) by its str()."""
    return json.dumps(value, sort_keys=True, default=str)


def _newest(version, next_seq, newest):
    """A task's (version, next event id) from its database row and its newest
    event's id (None: none appended alone, each of which is a version more)."""
    if newest is None or newest < next_seq:
        return version, next_seq
    return version + newest + 1 - next_seq, newest + 1




class _NotWaiting:
    """SQLiteStore.not_waiting()'s block; ``claims``: the sends it claimed
    (see SQLiteStore.claim_send), each [owner, key, task id, at, freed]."""

    __slots__ = ("store", "here", "was", "claims")

    def __init__(self, store):
        self.store, self.here = store, store._here

    def __enter__(self):
        self.was = getattr(self.here, "no_wait", False), getattr(self.here, "claims", None)
        self.claims = []
        self.here.no_wait, self.here.claims = True, self.claims

    def __exit__(self, kind, error, traceback):
        self.here.no_wait, self.here.claims = self.was
        if self.claims:
            self.store._after_not_waiting(self.claims, kind is not None and
                                          issubclass(kind, _WouldWait))
        return False


class _Lent:
    """``with store._db() as db``: a connection borrowed from the store's
    pool for the block, given back after it."""

    __slots__ = ("store", "db")

    def __init__(self, store):
        self.store, self.db = store, None

    def __enter__(self):
        self.db = self.store._borrow()
        return self.db

    def __exit__(self, kind, error, traceback):
        import sqlite3
        self.store._give_back(self.db)
        if isinstance(error, sqlite3.DatabaseError):   # a damaged file, say: named, with the fix
            raise self.store._failed(error) from error
        return False


class _SQLiteWrite:
    """One write transaction of an SQLiteStore, on the connection its groups
    commit on (whose page cache stays warm: a commit on another connection
    would empty it): BEGIN IMMEDIATE, then COMMIT, or ROLLBACK on an error.
    SQLite's errors on writing (read-only file, full disk, lock held too
    long) leave as the store's A2AError for them."""

    __slots__ = ("store", "group")

    def __init__(self, store):
        self.store, self.group = store, None

    def __enter__(self):
        import sqlite3
        store = self.store
        store._may_wait()
        group = self.group = store._writing()
        deadline = time.monotonic() + store.busy_timeout
        if not group.turn.acquire(timeout=store.busy_timeout):
            raise store._locked()
        try:
            db = store._group_db(group)
            store._wait_until(group, db, deadline)
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            group.turn.release()
            raise store._failed(error) from error
        except BaseException:
            group.turn.release()
            raise
        return db

    def __exit__(self, kind, error, traceback):
        import sqlite3
        store, group = self.store, self.group
        db = group.db
        try:
            if kind is None:
                try:
                    db.execute("COMMIT")
                except sqlite3.OperationalError as failed:
                    error = failed
        finally:                            # whatever ended the block (or the COMMIT)
            try:
                if db.in_transaction:
                    db.execute("ROLLBACK")
            except BaseException as failed:     # the connection is in no state to go on
                group.db = None
                db.close()
                if not isinstance(failed, Exception):
                    raise
            finally:
                group.turn.release()
        if isinstance(error, sqlite3.OperationalError):
            raise store._failed(error) from error
        return False


# An outage: a shared store's database cannot be reached, or its file cannot
# be written (read-only, full, failing). Every request that needs it would
# otherwise try, and wait (for a connection, for a lock, for write_wait), and
# fail; and each failure would be logged. So a store keeps a circuit: the
# first failure opens it (one WARNING); while it is open, what needs the
# store is refused at once (ServerBusyError: HTTP 503 with Retry-After). One
# request every ``probe_every`` seconds first tries the store with the
# store's own small probe (a new connection; a write that changes nothing),
# never with a client's work: if it works the outage is over (one INFO) and
# that request goes on. stats() counts the outages and the requests refused
# during them. While the store is up, the circuit costs one attribute test.

class _Circuit:
    """Whether a store's database is known to be down, for the threads of one
    process. ``what`` names the store in the log and in the answers, and
    ``state`` says what is wrong ("cannot be reached right now");
    ``probe()``, the store's, raises while it is still down; ``every``:
    seconds between two probes (and the Retry-After of a refusal)."""

    __slots__ = ("what", "state", "probe", "every", "lock", "down", "since", "why",
                 "probe_at", "back_at", "outages", "refused")

    def __init__(self, what, state, probe, every):
        self.what, self.state, self.probe, self.every = what, state, probe, every
        self.lock = threading.Lock()
        self.down = False           # read without the lock: all a request pays while it is up
        self.since = self.probe_at = self.back_at = 0.0
        self.why = ""
        self.outages = self.refused = 0

    def check(self):
        """Before work that needs the store, while it is down: the refusal, at
        once; but one thread every ``every`` seconds probes first, and goes
        on if the store is back."""
        now = time.monotonic()
        with self.lock:
            if not self.down:
                return
            if now < self.probe_at:
                self.refused += 1
                raise self.refusal()
            self.probe_at = float("inf")        # one probe at a time: the others are refused
        try:
            self.probe()
        except Exception:                       # still down
            with self.lock:
                self.refused += 1
                self.probe_at = time.monotonic() + self.every
            raise self.refusal() from None
        except BaseException:                   # (not here: another thread may try at once)
            self.probe_at = now
            raise
        self.closed()

    def refusal(self, state=None):
        """The error a request gets while the store is down (its ``why`` is
        for the log); ``state``: what is wrong, if more is known."""
        wait = max(1, round(self.every))
        error = ServerBusyError(f"{self.what} {state or self.state}; try again in {wait} s")
        error.retry_after = wait
        return error

    def opened(self, why, began=None):
        """The store failed as in an outage: open the circuit (said once), or
        keep it open. ``began``: when the attempt that failed began (one
        that began before the store was back says nothing new)."""
        with self.lock:
            if self.down or began is not None and began < self.back_at:
                return
            self.down, self.since, self.why = True, time.monotonic(), why
            self.probe_at = self.since + self.every
            self.outages += 1
        _log().warning("%s %s (%s): what needs it is answered SERVER_BUSY (503, Retry-After) "
                       "at once until it is back; trying it again every %g s", self.what,
                       self.state, why, self.every)

    def closed(self):
        """The store works again: close the circuit (said once)."""
        with self.lock:
            if not self.down:
                return
            self.down = False
            self.back_at = time.monotonic()
            took = self.back_at - self.since
        _log().info("%s is back after %.1f s (%d requests refused meanwhile)", self.what, took,
                    self.refused)

    def stats(self):
        return {"outages": self.outages, "refused_while_down": self.refused, "down": self.down}


# -- several processes on one port, and the store a location names ------------------------
#
# serve(workers=N) forks N processes after the socket is bound, each serving
# it with threads: only worth it with a store they share, so it lives here.
# open_store(url) is how the command line (--store, A2A_STORE) and the
# example apps turn a location into a store.

def serve_workers(httpd, workers, grace, serve_one):
    """a2a_min.serve(workers=N): fork ``workers`` processes after the socket
    ``httpd`` is bound: each accepts connections on it and serves them
    threaded (``serve_one(httpd, grace)``), one CPU core each; the tasks
    are shared through the store. This process only waits: it forwards
    SIGTERM to the workers, and starts a new worker for one that died.
    A worker still running ``grace`` + 5 seconds after the stop (its drain
    takes ``grace`` and a second at most) is killed: the server always ends.

    On Linux it is also the subreaper of all the workers start (prctl(2)'s
    PR_SET_CHILD_SUBREAPER): what a worker's process leaves behind when it
    dies (the children of an --exec program its kill -9 took with it, one
    gone to a session of its own) comes to this process, not to PID 1, and
    is killed when a worker or one such process ends, and as this one
    returns. So nothing a worker started outlives the server."""
    import signal
    children, stopping, restarted = {}, [], [0.0]
    adopts = _adopt_orphans()

    def start(again=False):
        if again and time.monotonic() - restarted[0] < 1.0:
            time.sleep(1.0)                        # workers that die at once: not a fork storm
        restarted[0] = time.monotonic() if again else restarted[0]
        # A SIGTERM may come while a worker is being started: held back
        # until the new worker is in ``children`` (so stop() reaches it), and
        # in the worker until it has the default action (not this process's
        # stop(), which would leave it serving).
        term = {signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, term)
        try:
            if stopping:                           # (a SIGTERM came during the sleep above)
                return
            pid = os.fork()
            if pid == 0:                           # the worker
                code = 1
                try:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, term)
                    serve_one(httpd, grace)
                    code = 0
                except BaseException:
                    _log().exception("worker %d failed", os.getpid())
                finally:
                    os._exit(code)
            children[pid] = True
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, term)
        if stopping:                               # stop() ran before it knew this worker
            os.kill(pid, signal.SIGTERM)

    def stop(*_):
        stopping.append(time.monotonic())
        for pid in list(children):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    # Every worker is woken by each new connection, and only one gets it: the
    # others must find nothing to accept and go back to waiting (and to their
    # shutdown check), not block in accept() until the next connection. (This
    # process keeps the socket open, for the workers it may start again.)
    httpd.socket.setblocking(False)
    signal.signal(signal.SIGTERM, stop)
    for _ in range(workers):
        start()
    while children:
        try:                                       # (once stopping, a look every 50 ms)
            pid, status = os.waitpid(-1, os.WNOHANG if stopping else 0)
        except KeyboardInterrupt:                  # (Ctrl-C reached the workers too)
            stop()
            continue
        except ChildProcessError:
            break
        if pid == 0:                               # none has ended yet
            if time.monotonic() > stopping[0] + grace + 5:
                _log().warning("workers %s still running %.1f s after the stop: killed",
                               sorted(children), grace + 5)
                for pid in children:
                    os.kill(pid, signal.SIGKILL)
                stopping[0] = float("inf")         # (said and done once)
            time.sleep(0.05)
            continue
        if adopts:                                 # (an orphan, or a worker and its orphans)
            _end_orphans(children)
        if children.pop(pid, None) and not stopping:
            _log().warning("worker %d ended (status %d); starting another", pid, status)
            start(again=True)
    while adopts and _end_orphans(children):       # (none is a worker now: ended, then reaped)
        try:
            os.wait()
        except ChildProcessError:
            break


def _adopt_orphans():
    """Make this process the subreaper of all it starts (Linux), and say
    whether it is."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return False
    return prctl(ctypes.c_int(36), ctypes.c_ulong(1)) == 0     # 36: PR_SET_CHILD_SUBREAPER


def _end_orphans(workers):
    """SIGKILL each child of this process but ``workers``, and say how many
    there were. Only this thread reaps them, so none of those pids can be
    reused by another process while this looks (a dead child is a zombie)."""
    import signal
    me, found = os.getpid(), 0
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in workers:
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    if int(f.read().rpartition(b")")[2].split()[1]) != me:   # (its parent)
                        continue
                os.kill(int(name), signal.SIGKILL)
                found += 1
            except (OSError, ValueError, IndexError):
                pass
    return found


# The store a location names (a file, sqlite:, postgresql://): a2a_min's, which
# reaches this module or a2a_postgres (so neither reaches the other).
open_store = a2a_min.open_store


# =============================================================================
# 2. Sharing a store between processes
# =============================================================================
#
# With a store that several processes share (SQLiteStore: workers of one
# server, or gunicorn's), a task may be written by another process than the
# one running its agent, and the protocol must not notice (section 5.1: the
# same results on every binding, whichever process answers):
#
#   - a stream here follows a task written there: it reads the task's events
#     from the store, so it needs only to be woken when there may be news;
#   - CancelTask there reaches the agent running here: the CANCELED task is in
#     the store, and the turn here must be told (its next write would fail the
#     version check anyway, and the table refuses any change to the task);
#   - a process that dies (kill -9, a crash, a lost machine) leaves its
#     running tasks WORKING with nobody working on them.
#
# One thread per process watches the store for all three. Every
# ``store_poll`` seconds (ten times that while this process follows no task:
# an idle worker wakes 10 times a second, not 100) it asks the store whether
# another process committed (store.changed(): PRAGMA data_version, about
# 2 us); if so it reads, in one statement, the heads of the tasks followed
# here (store.heads(): the version and the state of each), or of those the
# store says changed
# (store.touched()), wakes the streams of those that changed, ends the
# streams of those that are gone (evicted there) as an eviction here does,
# tells the turns here whose tasks ended there, and does the store's
# upkeep that no request should wait for (tidy(): evicting ahead of need;
# checkpoint(): folding the write-ahead log back into the file). Every third of
# ``lease_ttl`` it renews this process's leases (each commit of a running
# task names the process whose agent runs it), and ends the tasks whose
# lease ran out: their process stopped renewing, so it is gone. They end
# FAILED, with a status message that says so. They are not run again: an
# agent is a plain function, and running it twice could do twice what it did
# (send a mail, book a room); the client decides, by sending the message
# again. A graceful shutdown does the same at once for the turns that did
# not finish in time (Server.shutdown), so a rolling restart of workers
# leaves no task waiting for a lease to run out.
#
# So a shared store has, besides a2a_min's store contract (its section 4):
#
#   renew(holder) / expired()        leases: which process runs a task's agent
#   heads(task_ids)                  {id: (version, state)}: what the watch reads
#   live_tasks                       the _LiveTasks subclass a server uses on it
#                                    (SharedLiveTasks): it watches the others' news
#   touched()                        (if it can) ids changed since the last call
#   tidy() / checkpoint()            (if it has them) upkeep between requests
#   wake_on(wake)                    (if it can) call wake(task_id) when another
#                                    process committed
#   _circuit                         its database is known to be down (_Circuit)


class SharedLiveTasks(a2a_min._LiveTasks):
    """A Server's live tasks on a store other processes share (the store's
    ``live_tasks``): a2a_min's, and what sharing needs besides. Its watch
    thread (_StoreWatch) brings this process the news of the other
    processes' commits through the methods below; each commit of a running
    task names this process (``holder``) in the store's leases; a host on an
    event loop has its writes run on the store's threads (``off_loop``:
    StoreThreads), as a write may wait for another process's."""

    def __init__(self, *args):
        super().__init__(*args)
        self.missed = {}            # task id -> owner: turns whose end the store missed
        self.holder_of = (None, None)   # (process id, this process's name in leases)
        self.off_loop = StoreThreads(self)
        self.watch = None           # the watch of the others' commits (watched)

    def begin(self, ctx, call):
        """a2a_min's, refused at once while the store is known to be away: no
        agent works for a task that cannot be stored."""
        circuit = getattr(self.store, "_circuit", None)    # (a store of your own may have none)
        if circuit is not None and circuit.down:
            circuit.check()
        return super().begin(ctx, call)

    def new_channel(self, owner, caller=None):
        """a2a_min's, naming this process in the leases of the tasks it runs."""
        channel = super().new_channel(owner, caller)
        channel.holder = self.holder
        return channel

    def keep(self, task_id, channel):
        """a2a_min's; a watch that rests (no task followed here) looks often again."""
        super().keep(task_id, channel)
        if self.watch is not None and self.watch.resting:
            self.watch.follow()

    def watched(self):
        """This process's watch of the store, started on first use (and again
        after a fork)."""
        if self.watch is None or self.watch.pid != os.getpid():
            with self.lock:
                if self.watch is None or self.watch.pid != os.getpid():
                    self.watch = _StoreWatch(self)

    def end_unfinished(self, task_id, owner, why):
        """End FAILED a running task whose agent will not finish (its process
        is gone, or is shutting down), with ``why`` as its status message."""
        try:
            with self.lock:
                channel = self.channel(task_id, owner)
            with channel.lock:
                task = channel.task
                if task["status"]["state"] in _IDLE_STATES:
                    return
                now = self.now()
                body = {"taskId": task_id, "contextId": task.get("contextId", ""),
                        "status": {"state": "TASK_STATE_FAILED", "timestamp": now,
                                   "message": a2a_min.new_message(why, taskId=task_id,
                                                          contextId=task.get("contextId", ""))}}
                channel.change("statusUpdate", body, now, {"statusUpdate": body})
                self.stop(channel)
        except A2AError:                       # ended meanwhile, or gone: nothing to do
            return
        _log().warning("task %s ended FAILED: %s", task_id, why)
        self.forget(task_id)

    @property
    def holder(self):
        """This process, as a shared store's leases name it (named again after a fork)."""
        pid = os.getpid()
        if self.holder_of[0] != pid:
            self.holder_of = (pid, f"{pid}-{os.urandom(6).hex()}")
        return self.holder_of[1]


    def followed(self):
        """{task id: (the version read here, does a turn of it run here)}: the
        tasks this process follows (a turn, a stream, a request waiting)."""
        with self.lock:
            return {task_id: (channel.version, channel.active is not None)
                    for task_id, channel in self.channels.items()}

    def following(self):
        """Does this process follow any task, or owe the store a turn's end?
        (While it does, the watch looks often.)"""
        return bool(self.channels or self.missed)

    def wake(self, task_id, state=None, idle_only=False):
        """Another process committed to ``task_id``: its streams here look
        again (``idle_only``: unless a turn of it runs here, whose own commits
        wake them); a turn of it running here stops if ``state`` says the task
        ended there (CancelTask there)."""
        channel = self.channels.get(task_id)
        if channel is None:
            return
        turn = channel.active
        if turn is None or not idle_only:
            channel.wake()
        if turn is not None and state in TERMINAL_STATES and channel.task is not None and \
                channel.task["status"]["state"] not in TERMINAL_STATES:
            self.stop(channel)

    def gone(self, task_id):
        """Another process removed ``task_id``: a turn of it here stops, and
        its streams end as an eviction here ends them."""
        channel = self.channels.get(task_id)
        if channel is not None:
            self.stop(channel)
        self.evicted(task_id)

    def let_go(self):
        """Forget the tasks nobody here needs now (no turn, stream or waiting
        request): the next request reads them from the store."""
        with self.lock:
            channels = list(self.channels.items())
        for task_id, channel in channels:
            if channel.active is None and not channel.followers and not channel.waiting \
                    and not channel.wakers:
                # This lock, then the channel's (a turn beginning holds that:
                # see _start_turn), in the order SubscribeToTask takes them.
                with self.lock, channel.lock:
                    if self.channels.get(task_id) is channel:
                        self._let_go(task_id, unless_followed=True)

    def unrecorded(self, task_id, owner):
        """A turn's end the store missed: the watch ends its task FAILED once
        it can (record_ends), or this process's leases would keep it WORKING."""
        self.missed[task_id] = owner

    def record_ends(self):
        """End FAILED the tasks whose turns ended while the store could not be
        written (it was away longer than it rides out): each is read anew, and
        stays owed until it is idle there."""
        for task_id, owner in list(self.missed.items()):
            self.forget(task_id)               # (its channel may be behind the store)
            self.end_unfinished(task_id, owner, "the agent finished while the task store could "
                                "not be written, so what it produced is lost (see the server "
                                "log); send the message again")
            stored = self.store.get(task_id, owner)
            if stored is None or stored["status"]["state"] in _IDLE_STATES:
                del self.missed[task_id]

    def cut(self):
        """Shutdown, its grace over with turns still running: their tasks end
        FAILED now (they outlive this process: not when its lease ends; their
        streams say so before they stop), then the streams stop as
        a2a_min's do."""
        with self.lock:
            running = [(i, c.owner) for i, c in self.channels.items() if c.active]
        for task_id, owner in running:
            self.end_unfinished(task_id, owner, "the server shut down before the agent "
                                "finished; send the message again")
        super().cut()


class _StoreWatch:
    """The thread that watches a shared store for one process of a Server.
    It holds the Server's live tasks (a2a_min._LiveTasks) weakly, and ends
    when the Server shuts down or is gone: a thread must not keep alive what nobody else uses."""

    def __init__(self, live):
        import weakref
        self.live = weakref.ref(live)
        self.pid = os.getpid()
        self.marks = {}                     # task id -> its version when last looked at
        self.woken = threading.Event()      # set: look now (news heard, or a task to follow)
        self.resting = False                # no task followed here: looks 10 times less often
        threading.Thread(target=self._run, args=(live.closing, live.store.store_poll),
                         name="a2a-store-watch", daemon=True).start()

    def _run(self, closing, poll):
        seen, renew_at, resting = None, 0.0, False
        woken = self.woken                  # a store that hears of commits says so at once
        wake_on = getattr(self.live().store, "wake_on", None)
        if wake_on is not None:
            wake_on(lambda task_id: self._heard(woken, task_id))
        del wake_on                         # (it holds the store, which holds the Server)
        while True:
            if woken.wait(poll * (10 if resting else 1)):
                woken.clear()               # (a flood of news is looked at 1,000 times a second at most)
                if closing.wait(0.001):
                    return
            elif closing.is_set():
                return
            live = self.live()
            if live is None:
                return
            try:
                version = live.store.changed()
                if version != seen:
                    seen = version
                    touched = getattr(live.store, "touched", None)
                    self._news(live, touched and touched())
                    if hasattr(live.store, "tidy"):     # upkeep, when there was news
                        live.store.tidy()
                        live.store.checkpoint()
                live.record_ends()                      # turns whose end was not stored
                if time.monotonic() >= renew_at:          # (the store's leases, its ttl)
                    renew_at = time.monotonic() + live.store.lease_ttl / 3
                    live.store.renew(live.holder)
                    for task_id, owner in live.store.expired():
                        self._abandoned(live, task_id, owner)
            except ServerBusyError:            # busy, or down (the store says so, once)
                closing.wait(1.0)
            except Exception:                  # the store failed: say so, go on
                _log().exception("watching the shared task store failed")
                closing.wait(1.0)
            # Nothing followed here (no task's channel, no end to record): no news
            # can matter to this process but its leases', so it looks less often,
            # until a channel is made (_LiveTasks.channel and make_task: follow()).
            self.resting = True             # (said before looking: a channel made
            # meanwhile is seen here, or sees resting and wakes this thread)
            resting = self.resting = not live.following()
            del live

    def follow(self):
        """A task is followed here now: look as often as ``store_poll`` again."""
        if self.resting:
            self.resting = False
            self.woken.set()

    def _heard(self, woken, task_id):
        """The store heard, in its own thread, that a process committed to
        ``task_id`` (PostgreSQL's NOTIFY names the task). If no turn of it
        runs here, the commit was another process's: its streams here are
        woken from that thread, at once (under load each thread a piece of
        news passes through waits its turn for the interpreter, so the fewer
        the sooner). A task whose turn runs here hears of its own commits as
        they are made, and of another's (CancelTask there) at the watch's
        look, which follows (and finds a task gone, or ended there)."""
        woken.set()
        live = self.live()
        if live is not None:
            live.wake(task_id, idle_only=True)

    def _news(self, live, touched=None):
        """Another process committed: wake the streams here of each task that
        changed, end those of a task that is gone (evicted there: as
        _LiveTasks.evicted ends them here), and tell each turn running here
        whose task has ended elsewhere (CancelTask there). Which tasks
        changed is read once, for all of them (store.heads: their marks and
        states), not by each stream: 100 streams here would otherwise each
        read the store at every commit anywhere. ``touched``: the ids of
        the tasks that changed, if the store knows them (PostgreSQL's
        notifications name them), else every task followed here is looked at.
        A task changed if its version is not the one seen at the last look
        (or, at the first, the one its channel read)."""
        followed = live.followed()
        marks = self.marks
        for task_id in [i for i in marks if i not in followed]:
            del marks[task_id]
        looked = [task_id for task_id in (followed if touched is None else touched)
                  if task_id in followed]
        heads = live.store.heads(looked) if looked else {}
        for task_id in looked:
            version, running = followed[task_id]
            head = heads.get(task_id)
            if head is None:
                if version:                 # (stored before the look: so gone since)
                    live.gone(task_id)
                continue
            if marks.get(task_id, version) == head[0]:
                continue
            marks[task_id] = head[0]
            if touched is None or running:  # (else woken as the news came: _heard)
                live.wake(task_id, head[1])
        live.let_go()

    @staticmethod
    def _abandoned(live, task_id, owner):
        """The process running this task is gone: end it FAILED."""
        if live.followed().get(task_id, (0, False))[1]:
            return                              # it runs here: renewed next time
        live.end_unfinished(task_id, owner, "the live process running this task stopped "
                               "before the agent finished (its lease ran out)")


# -- a shared store under an event loop --------------------------------------------------
#
# A host on an event loop (serve_asyncio, asgi_app) must never wait, and a
# write to a store that other processes share may wait for another
# process's to finish. The core asks a shared store for its StoreThreads
# (SharedLiveTasks.off_loop), and such a host hands them every request:
#
#   - a request that needs no write (every read, and a SendMessage that
#     starts a new task: its first write comes before the agent) is answered
#     on the loop, inside store.not_waiting(), where a write refuses at once
#     (_WouldWait) rather than wait; reads never wait (SQLite's write-ahead
#     log). (A SendMessage's claim of its key is a write that is made there
#     when no lock is held: SQLiteStore.claim_send.) A store without
#     not_waiting() (PostgresStore) skips this step;
#   - the others run again from the start on a store thread (at most
#     ``store_threads`` of them): nothing was written the first time;
#   - an async agent's writes (its turn runs on the loop) run on a store
#     thread each, except the commonest turn, a plain answer stored once:
#     the turns that end in one pass of the loop are committed together, in
#     one transaction (commit_many, _LoopCommits), on the loop itself unless
#     another process holds the write lock.
#
# A hand-off to a thread and back is about a third of a small request's
# cost: most requests never make one.


class _WouldWait(BaseException):
    """A shared store's write, asked for inside not_waiting(): nothing was
    written. (A BaseException: no ``except Exception`` on the way may take
    it for the request's error.)"""


class StoreThreads:
    """What a host on an event loop does with a server whose store other
    processes share (see above), given its live tasks (``Server.live``):
    ``handle_http(answer, loop, spawn, *args)`` answers a request with
    ``answer`` (the server's handle_http), with a Response or an asyncio
    future of one; an async agent's
    turn (a2a_min's one driver) writes through ``run`` and ``ended_on_loop``."""

    def __init__(self, live):
        self.live, self.pool = live, None
        self.lock = threading.Lock()
        self.commits = weakref.WeakKeyDictionary()      # loop -> its _LoopCommits

    def run(self, fn, *args):
        """``fn(*args)`` on one of the store threads: an awaitable of its result."""
        import asyncio
        if self.pool is None:
            from concurrent.futures import ThreadPoolExecutor
            with self.lock:
                if self.pool is None:
                    self.pool = ThreadPoolExecutor(self.live.store.store_threads,
                                                   thread_name_prefix="a2a-store")
        return asyncio.get_running_loop().run_in_executor(self.pool, functools.partial(fn, *args))

    def handle_http(self, answer, loop, spawn, *args):
        """``answer(*args, spawn)`` on the loop if it needs no write, else on a
        store thread (a future of the Response)."""
        not_waiting = getattr(self.live.store, "not_waiting", None)
        if not_waiting is not None:
            try:
                with not_waiting():
                    return answer(*args, spawn)
            except _WouldWait:
                pass
        return self.run(answer, *args, functools.partial(_call_on, loop, spawn))

    def ended_on_loop(self, turn, answer):
        """End the turn as _TurnWriter.complete would store it once, if it is
        one that may (turn.at_once): its task committed with the others this
        pass of the loop ends (_LoopCommits), not on a store thread. Whether it did."""
        task = turn.at_once(answer)
        if task is None or not hasattr(self.live.store, "commit_many"):
            return False
        import asyncio
        loop = asyncio.get_running_loop()
        commits = self.commits.get(loop)
        if commits is None:
            commits = self.commits[loop] = _LoopCommits(self, loop)
        channel = turn.channel
        commits.add(functools.partial(self.saved_on_loop, turn, task), task, channel.owner,
                    channel.version, None, channel.caller, channel.holder, False)
        return True

    def saved_on_loop(self, turn, task, committed):
        """The rest of ended_on_loop's turn, once ``task`` was committed
        (``committed``: commit()'s result, or the error that refused it)."""
        if isinstance(committed, BaseException):
            self.run(turn.fail, committed)
            return
        turn.saved(task, committed)


class _LoopCommits:
    """The commits that an event loop's turns end with during one pass of
    the loop: committed together (store.commit_many) once the pass is over,
    on the loop itself unless a write lock is held (then on a store thread).
    Many clients' SendMessage answered by async agents end in the same pass,
    so one transaction holds them all, and no thread is handed anything; a
    commit with nothing else waiting to run on the loop is made at once."""

    __slots__ = ("threads", "loop", "waiting")

    def __init__(self, threads, loop):
        self.threads, self.loop, self.waiting = threads, loop, []

    def add(self, then, *args):
        """store.commit(*args), with ``then(its result, or its error)`` after
        it. At once if nothing else waits to run on the loop (one client: no
        company is coming); else at the end of this pass, with the others."""
        self.waiting.append((args, then))
        if len(self.waiting) == 1:
            ready = getattr(self.loop, "_ready", None)    # (asyncio's own loop has it)
            # (Not inside not_waiting(): an eager task, Python 3.12+, may end its
            # turn within the request that began it, where no write may be made.)
            if ready is not None and not ready and not self.threads.live.store._refusing():
                self.flush()
            else:
                self.loop.call_soon(self.flush)

    def flush(self):
        batch, self.waiting = self.waiting, []
        calls = [args for args, _ in batch]
        store = self.threads.live.store
        try:
            outcomes = store.commit_many(calls, wait=False)
        except _WouldWait:                  # a write lock is held: wait on a thread
            done = self.threads.run(store.commit_many, calls)
            done.add_done_callback(functools.partial(self._settle_later, batch))
            return
        except Exception as error:          # the store failed: each commit did
            outcomes = [error] * len(batch)
        self._settle(batch, outcomes)

    def _settle_later(self, batch, done):
        try:
            outcomes = done.result()
        except Exception as error:
            outcomes = [error] * len(batch)
        self._settle(batch, outcomes)

    @staticmethod
    def _settle(batch, outcomes):
        for (_, then), outcome in zip(batch, outcomes):
            try:
                then(outcome)
            except Exception:                # one turn's end must not stop the others'
                _log().exception("ending a turn after its commit failed")

