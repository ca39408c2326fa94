"""a2a_postgres: the task store of a2a_min in PostgreSQL, for several machines and serverless.

The optional companion of a2a_min.py (the store contract of its section 4).
Several servers on several machines, or many short-lived AWS Lambda
instances, share one database and behave as one server: a task made on one
is read, listed, followed, resumed with Last-Event-ID, continued and
canceled on any other. It needs psycopg 3 (in a checkout, pip install
'.[postgres]'; or pip install 'psycopg[binary]'); a2a_min.py never imports it unless a store URL
says postgresql://.

Why a module of its own. a2a_min.py holds everything a request needs to be
answered, with the in-memory and the SQLite store (the standard library has
sqlite3). This store needs a third-party driver and a database server, and
a person learning how a request is answered does not need its SQL: it is a
driver for a database server, which shared/STYLE.md names as a companion,
like a2a_grpc.py for the gRPC binding. It is importable on its own, and
``a2a_store.open_store("postgresql://...")`` (``--store``, ``A2A_STORE``)
imports it when asked.

Quick start::

    import a2a_min, a2a_postgres

    store = a2a_postgres.PostgresStore("postgresql://a2a@db.internal/a2a")
    a2a_min.serve(a2a_min.Server(lambda text: "You said: " + text, store=store))

or ``python a2a_min.py --store postgresql://a2a@db.internal/a2a``.

How it works. Each task is one row of ``a2a_tasks``: its JSON as the
client sees it, and beside it what the store needs without decoding it
(owner, caller, state, status timestamp, version, sizes). Its stream
events, push configs and lease are rows of their own tables that go with it
(ON DELETE CASCADE). Every change of a task is one transaction that locks
its row (SELECT ... FOR UPDATE), checks the version the writer read, writes
the row and appends the event (a chunk of a streamed artifact: the event
alone, until the chunks weigh as much as the task; see a2a_min's "A streamed
artifact"): two writers of one task, in two processes, never lose an
update, and never leave a task without its event or an event without its
task. A new task that ends as it begins (the common SendMessage)
is one statement: it is inserted if it fits the bounds as they are.

Bounds. The store is bounded as a2a_min's are (tasks, bytes, each caller's
share, task_ttl; the oldest idle tasks evicted first, a new task refused
rather than a running one lost). The counts live in ``a2a_counts``, split
over 64 rows per caller (a connection adds to one of them): a single row
of totals would be locked by every commit until it ends, and commits would
go one at a time. A bound may therefore be passed by the commits that are
in flight at the same moment; the next commit evicts back under it.

Wake-ups. A stream here follows a task written elsewhere by reading its
events from the table; it only needs to be woken when there may be news. A
commit that changes a task others may follow sends NOTIFY naming the task
(delivered at commit, in commit order), and one connection per process
LISTENs, counts what it hears (changed() is that count) and keeps the ids
it heard (touched()): the Server's store watch then reads the heads of
those tasks only, in one statement, and wakes their streams alone.
Notifications are lost while the listener reconnects (psycopg/psycopg#962),
so changed() also moves on every reconnect and every ``poll`` seconds, and
touched() then says None: the watch looks at every task followed here.
Where LISTEN cannot work (AWS Lambda, whose process is frozen between
invocations) ``listen=False``: changed() then moves every time it is asked,
and streams poll the table every ``store_poll`` of the Server.
Through a pooler in session mode (PgBouncer ``pool_mode = session``)
everything works as is; transaction mode is not supported (LISTEN, and
psycopg's prepared statements, need a session).

Connections. Each process opens at most ``pool`` connections, lent to one
thread at a time, plus the one that listens; a request that finds them all
lent waits ``pool_timeout`` seconds and is then answered ServerBusyError. A
connection made before os.fork() is never used (nor closed) in the child.
A connection that broke is closed and replaced on next use. A database that
cannot be connected to is an outage (a2a_min's _Circuit): one WARNING says
so, and while it lasts requests get ServerBusyError (HTTP 503 with
Retry-After) at once, without trying; one connection is tried every
``probe_every`` seconds, and the first that works ends it (one INFO). A turn
of an agent that was running waits up to ``write_wait`` for it to end, and
streams go on waiting and resume once it is back. stats() counts the
outages and the requests refused during them.

Schema versions. The schema records its version in ``a2a_meta``; a store
brings an older schema forward at start, step by step, inside one
transaction that holds an advisory lock, so several processes starting at
once migrate exactly once, and refuses a schema newer than it knows.
Tables are named ``a2a_*`` in the ``schema`` given (default ``public``), so
they can live beside an application's own. Back them up with ``pg_dump``
(``pg_dump -t 'a2a_*' URL > tasks.sql``).
"""

__all__ = ["PostgresStore", "POSTGRES_SCHEMA_VERSION"]

import json
import os
import random
import threading
import time

import a2a_min
import a2a_store
from a2a_min import ConflictError, InternalError, ServerBusyError

# The schema, one step per version: step i turns a schema of version i into
# one of version i + 1 (a2a_meta is made before any step).
_MIGRATIONS = (
    (   # version 1
        """CREATE TABLE a2a_tasks (
            id text PRIMARY KEY,
            n bigserial NOT NULL,             -- the order tasks were made in: ties of idle_ms
            owner text NOT NULL,              -- json.dumps((tenant, principal))
            caller text NOT NULL,             -- json.dumps of whom it counts against
            context_id text NOT NULL,
            state text NOT NULL,
            stamp text NOT NULL,              -- status.timestamp, for ListTasks
            idle_ms bigint,                   -- when it became idle; NULL while an agent works
            version integer NOT NULL,
            next_seq integer NOT NULL,        -- the sequence number of its next event
            first_seq integer NOT NULL,       -- ... of its oldest kept event (next_seq: none)
            event_bytes integer NOT NULL,     -- the JSON size of its kept events
            config_bytes integer NOT NULL,    -- the JSON size of its push configs
            size integer NOT NULL,            -- its JSON size, event_bytes and config_bytes
            body bytea NOT NULL)""",
        "CREATE INDEX a2a_tasks_by_owner ON a2a_tasks (owner, stamp, id)",
        "CREATE INDEX a2a_tasks_idle ON a2a_tasks (idle_ms, n) WHERE idle_ms IS NOT NULL",
        "CREATE INDEX a2a_tasks_idle_by_caller ON a2a_tasks (caller, idle_ms, n) "
        "WHERE idle_ms IS NOT NULL",
        """CREATE TABLE a2a_events (
            task_id text NOT NULL REFERENCES a2a_tasks ON DELETE CASCADE,
            seq integer NOT NULL,
            body bytea NOT NULL,
            PRIMARY KEY (task_id, seq))""",
        """CREATE TABLE a2a_push_configs (
            task_id text NOT NULL REFERENCES a2a_tasks ON DELETE CASCADE,
            id text NOT NULL,
            n bigserial NOT NULL,             -- the order they were first put in
            body bytea NOT NULL,
            PRIMARY KEY (task_id, id))""",
        """CREATE TABLE a2a_leases (
            task_id text PRIMARY KEY REFERENCES a2a_tasks ON DELETE CASCADE,
            holder text NOT NULL,
            expires_ms bigint NOT NULL)""",
        "CREATE INDEX a2a_leases_by_holder ON a2a_leases (holder)",
        """CREATE TABLE a2a_counts (           -- caller '' is every task
            caller text NOT NULL,
            slot integer NOT NULL,            -- one of _SLOTS rows per caller
            tasks bigint NOT NULL,
            bytes bigint NOT NULL,
            PRIMARY KEY (caller, slot))""",
    ),
    (   # version 2: events appended alone (a2a_min's "A streamed artifact"): the
        # task has events after next_seq, which its body lacks (a2a_store._newest)
        "ALTER TABLE a2a_tasks ADD COLUMN appended boolean NOT NULL DEFAULT false",
    ),
    (   # version 3: the traceparent of the turn that made the task (no longer
        # written or read: a column is not dropped, so a schema keeps its version)
        "ALTER TABLE a2a_tasks ADD COLUMN origin text",
    ),
    (   # version 4: idempotent sends (a2a_min's claim_send): the first send of
        # each key, so that a repeat, on any server, answers as it did
        """CREATE TABLE a2a_sends (
            owner text NOT NULL,              -- json.dumps((tenant, principal))
            key text NOT NULL,                -- the messageId, or the Idempotency-Key
            digest text,                      -- of the first's message, beside a reply
            task_id text NOT NULL,            -- the first's task (made or to be made)
            at double precision NOT NULL,     -- when the first came: time.time()
            reply bytea,                      -- its answer, a Message (JSON), once it has one
            PRIMARY KEY (owner, key))""",
        "CREATE INDEX a2a_sends_by_at ON a2a_sends (at)",
    ),
)
POSTGRES_SCHEMA_VERSION = len(_MIGRATIONS)

_SLOTS = 64
_FRESH = 2.0            # seconds a connection may wait idle and be lent without a look
_TASK_COLUMNS = ("owner, state, version, next_seq, first_seq, event_bytes, size, config_bytes, "
                 "idle_ms, caller, appended")

# The bounds as they are: every task, the caller's share, and when the oldest
# idle task became idle.
_SQL_ROOM = """
    SELECT coalesce(sum(tasks) FILTER (WHERE caller = ''), 0),
           coalesce(sum(bytes) FILTER (WHERE caller = ''), 0),
           coalesce(sum(tasks) FILTER (WHERE caller = %(caller)s), 0),
           coalesce(sum(bytes) FILTER (WHERE caller = %(caller)s), 0),
           (SELECT min(idle_ms) FROM a2a_tasks WHERE idle_ms IS NOT NULL)
    FROM a2a_counts WHERE caller IN ('', %(caller)s)"""

# A new task that ends as it begins, in one statement, if it fits the bounds
# as they are and no task has expired (else commit() goes the general way,
# which makes room, or says what is wrong). It counts itself in the same
# statement; nobody can follow a task that did not exist, so no NOTIFY.
_SQL_INSERT_AT_ONCE = """
    WITH room AS (
        SELECT coalesce(sum(tasks) FILTER (WHERE caller = ''), 0) < %(max_tasks)s
           AND coalesce(sum(bytes) FILTER (WHERE caller = ''), 0) + %(size)s <= %(max_bytes)s
           AND coalesce(sum(tasks) FILTER (WHERE caller = %(caller)s), 0) < %(max_share)s
           AND coalesce(sum(bytes) FILTER (WHERE caller = %(caller)s), 0) + %(size)s
               <= %(max_share_bytes)s
           AND NOT EXISTS (SELECT 1 FROM a2a_tasks WHERE idle_ms < %(deadline)s) AS fits
        FROM a2a_counts WHERE caller IN ('', %(caller)s)
    ), made AS (
        INSERT INTO a2a_tasks (id, owner, caller, context_id, state, stamp, idle_ms, version,
                               next_seq, first_seq, event_bytes, config_bytes, size, body)
        SELECT %(id)s, %(owner)s, %(caller)s, %(context)s, %(state)s, %(stamp)s, %(now)s, 1,
               0, 0, 0, 0, %(size)s, %(body)s
        FROM room WHERE fits
        ON CONFLICT (id) DO NOTHING
        RETURNING 1
    ), counted AS (
        INSERT INTO a2a_counts (caller, slot, tasks, bytes)
        SELECT who, %(slot)s, 1, %(size)s FROM made, (VALUES (''), (%(caller)s)) AS v (who)
        ON CONFLICT (caller, slot) DO UPDATE
            SET tasks = a2a_counts.tasks + 1, bytes = a2a_counts.bytes + excluded.bytes
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM made), (SELECT count(*) FROM counted)"""

# A task's events appended alone (see a2a_min's "A streamed artifact"), read
# with its row in one statement: one snapshot.
_APPENDED = ("CASE WHEN appended THEN ARRAY(SELECT body FROM a2a_events WHERE task_id = "
             "a2a_tasks.id AND seq >= a2a_tasks.next_seq ORDER BY seq) END")
_SQL_GET = (f"SELECT version, next_seq, body, {_APPENDED} FROM a2a_tasks WHERE id = %s "
            "AND owner = %s")

# Eviction, oldest idle first, 64 at most to a statement. SKIP LOCKED: a task
# another transaction is changing right now is not idle for long; it is not
# waited for.
_SQL_EXPIRED = """
    DELETE FROM a2a_tasks WHERE id IN (
        SELECT id FROM a2a_tasks WHERE idle_ms < %s AND id <> %s
        ORDER BY idle_ms, n LIMIT 64 FOR UPDATE SKIP LOCKED)
    RETURNING id, caller, size"""
_SQL_IDLE = ("SELECT id, size FROM a2a_tasks WHERE idle_ms IS NOT NULL AND id <> %s "
             "ORDER BY idle_ms, n LIMIT 64 FOR UPDATE SKIP LOCKED")
_SQL_CALLER_IDLE = ("SELECT id, size FROM a2a_tasks WHERE caller = %s AND idle_ms IS NOT NULL "
                    "AND id <> %s ORDER BY caller, idle_ms, n LIMIT 64 FOR UPDATE SKIP LOCKED")


# A send's key claimed (a2a_min's claim_send), in one statement: inserted,
# or put over a record that is dead (``window`` old) or stale (no reply, no
# task, ``stale`` old: its first failed, or its process died). ON CONFLICT
# sees a racing session's insert once that commits, and locks the key's
# row, updated or not: of the sessions claiming one key at once, exactly
# one is first. The others then read the record (a new statement: the
# snapshot of this one may predate the row it locked, or hold one since
# replaced). Each claim removes the oldest dead records too, 64 at most,
# none another session holds.
_SQL_CLAIM_SEND = """
    WITH expired AS (
        DELETE FROM a2a_sends WHERE (owner, key) IN (
            SELECT owner, key FROM a2a_sends
            WHERE at < %(dead)s AND NOT (owner = %(owner)s AND key = %(key)s)
            ORDER BY at LIMIT 64 FOR UPDATE SKIP LOCKED)
    ), claimed AS (
        INSERT INTO a2a_sends AS s (owner, key, task_id, at)
        VALUES (%(owner)s, %(key)s, %(task)s, %(now)s)
        ON CONFLICT (owner, key) DO UPDATE
            SET task_id = excluded.task_id, at = excluded.at, reply = NULL, digest = NULL
            WHERE s.at < %(dead)s
        RETURNING 1
    )
    SELECT count(*) FROM claimed"""


def _on_lambda():
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))


class PostgresStore(a2a_min._Bounds):
    """The task store in PostgreSQL, shared by every process and machine that
    opens the same database (the store contract of a2a_min's section 4).

    ``url``: a libpq connection string or URL (``postgresql://user@host/db``;
    ``postgres://`` too). ``schema``: the PostgreSQL schema its ``a2a_*``
    tables live in (created if missing). ``pool``: the most connections this
    process opens at once for requests (besides the one that listens);
    ``pool_timeout``: seconds a request waits for one (then ServerBusyError);
    ``connect_timeout`` and ``statement_timeout``: seconds, for each
    connection and each statement (a statement past it is canceled, and the
    request answered ServerBusyError); ``write_wait``: seconds a write of a
    running task waits for a database that went away to come back;
    ``probe_every``: seconds between two tries to connect while it is away
    (the rest is refused at once). ``listen``: wake streams by
    LISTEN/NOTIFY (default: yes, except on AWS Lambda); ``poll``: seconds
    between two looks at the store when no notification came. The limits
    are a2a_min.TaskStore's.
    """

    shared = True                   # other processes may write the same tasks
    appends = True                  # a streamed artifact's chunks may be written alone

    def __init__(self, url, *, schema="public", pool=8, pool_timeout=5.0, connect_timeout=5.0,
                 statement_timeout=10.0, write_wait=10.0, listen=None, poll=1.0, probe_every=1.0,
                 lease_ttl=30.0, store_poll=0.01, store_threads=8, **limits):
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise RuntimeError("the PostgreSQL store needs psycopg 3: pip install "
                               "'.[postgres]' in a checkout (or pip install 'psycopg[binary]')"
                               ) from None
        super().__init__(**limits)
        self.lease_ttl, self.store_poll, self.store_threads = lease_ttl, store_poll, store_threads
        if url.startswith("postgres://"):
            url = "postgresql://" + url[len("postgres://"):]
        self.url = url
        self.schema = schema
        self.pool = pool
        self.pool_timeout = pool_timeout
        self.connect_timeout = connect_timeout
        self.statement_timeout = statement_timeout
        self.write_wait = write_wait
        self.listen = (not _on_lambda()) if listen is None else listen
        self.poll = poll
        self._channel = f"a2a_min.{schema}"[:63]          # NOTIFY's channel name
        self._lock = threading.Lock()
        self._idle = (None, [])             # (process id, its idle connections)
        self._lendable = (None, None)       # (process id, a semaphore of ``pool``)
        self._inherited = []                # connections from before a fork: never used
        self._listener = None               # this process's _Listener, once changed() was asked
        self._wakers = []                   # what wake_on() was given: called on each notification
        self._asked = 0                     # changed() without a listener: how often it was
        self._tick = None                   # the poll tick touched() last saw
        self._keys = {}                     # owner or caller -> a2a_min._key() of it
        self._complained = 0.0
        self._circuit = a2a_store._Circuit("the task store (PostgreSQL)", "cannot be reached right "
                                         "now", self._probe, probe_every)
        self._started = False               # (a database away at start is the start's error)
        self._migrate()
        self._started = True

    # -- connections ---------------------------------------------------------------

    def _connect(self):
        """A new connection. Whether one can be made is what says that the
        database is away (an outage), or back."""
        import psycopg
        from psycopg import sql
        began = time.monotonic()
        try:
            conn = psycopg.connect(self.url, autocommit=True,
                                   connect_timeout=max(1, round(self.connect_timeout)))
        except psycopg.OperationalError as error:
            if self._started:
                self._circuit.opened(f"{_safe_url(self.url)}, schema {self.schema}: "
                                     f"{str(error).strip()}; start it, or check the URL and "
                                     "the network", began)
            raise
        try:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
            conn.execute(sql.SQL("SET statement_timeout TO {}").format(
                sql.Literal(f"{int(self.statement_timeout * 1000)}ms")))
        except BaseException:
            conn.close()
            raise
        conn.slot = random.randrange(_SLOTS)        # the a2a_counts rows it adds to
        conn.idle_since = time.monotonic()
        return conn

    def _conn(self):
        """``with self._conn() as conn``: a connection of this process, lent."""
        return a2a_store._Lent(self)          # (it calls _borrow and _give_back)

    def _borrow(self):
        if self._circuit.down:              # known away: refused at once (or it is back)
            self._circuit.check()
        pid = os.getpid()
        with self._lock:
            owner, idle = self._idle
            if owner != pid:                # a new process (after a fork)
                self._inherited += idle
                idle = []
                self._idle = (pid, idle)
                self._lendable = (pid, threading.BoundedSemaphore(self.pool))
            lendable = self._lendable[1]
        if not lendable.acquire(timeout=self.pool_timeout):
            raise ServerBusyError(
                f"all {self.pool} connections of this server process to the task store "
                f"(PostgreSQL) stayed in use for {self.pool_timeout} s; try again shortly",
                metadata={"pool": str(self.pool)})
        try:
            while True:
                with self._lock:
                    conn = idle.pop() if idle else None
                if conn is None:
                    return self._connect()
                if time.monotonic() - conn.idle_since < _FRESH or self._answers(conn):
                    return conn
                conn.close()                # (the database went away meanwhile)
        except BaseException:
            lendable.release()
            raise

    def _probe(self):
        """Whether the database is back (see a2a_store._Circuit): a new
        connection, kept idle in place of those from before the outage."""
        conn = self._connect()
        with self._lock:
            owner, idle = self._idle
            if owner == os.getpid():
                stale, idle[:] = idle[:], [conn]
                conn = None
        for old in stale if conn is None else [conn]:
            old.close()

    @staticmethod
    def _answers(conn):
        """Whether a connection that waited idle still reaches the database
        (after a restart of the database, none does): one round trip."""
        import psycopg
        try:
            conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def _give_back(self, conn):
        with self._lock:
            owner, idle = self._idle
            mine = owner == os.getpid()
            if mine and not conn.closed and not conn.broken:
                conn.idle_since = time.monotonic()
                idle.append(conn)
                conn = None
        if conn is not None and mine:
            conn.close()
        if mine:
            self._lendable[1].release()

    def _failed(self, error):
        """The A2AError for a database error: unreachable, a statement past its
        timeout, a read-only or full database. The client is told what happened
        without the URL; the log says where, and what to do."""
        import psycopg
        text = str(error).strip()
        if isinstance(error, psycopg.errors.QueryCanceled):
            return ServerBusyError(
                f"the task store (PostgreSQL) did not answer within {self.statement_timeout} s; "
                "try again shortly")
        if isinstance(error, (psycopg.errors.ReadOnlySqlTransaction,
                              psycopg.errors.InsufficientPrivilege)):
            problem, fix = "refuses writes", "give the store's user a database it may write to"
        elif isinstance(error, psycopg.errors.DiskFull):
            problem, fix = "is out of disk", "free space on the database server"
        elif isinstance(error, psycopg.OperationalError):
            # (Not logged: a database that cannot be reached is an outage, which
            # its circuit says once; a connection that broke, while new ones
            # can be made, is not, and the next request gets a new one.)
            return self._circuit.refusal()
        else:
            problem, fix = "failed", "look at the server log"
        self._complain(problem, fix, text)
        return InternalError(f"the task store (PostgreSQL) {problem}: the server's operator "
                             f"must {fix}")

    def _complain(self, problem, fix, text):
        now = time.monotonic()
        if now - self._complained > 60:     # once a minute: an outage is not to fill the log
            self._complained = now
            a2a_min._log().error("task store PostgreSQL %s (schema %s) %s: %s (%s)",
                                 _safe_url(self.url), self.schema, problem, fix, text)

    _key = a2a_store.SQLiteStore._key     # an owner's key, remembered (self._keys)

    # -- schema --------------------------------------------------------------------

    def _migrate(self):
        """Bring the schema to POSTGRES_SCHEMA_VERSION, or refuse it. One
        transaction, under an advisory lock that every process migrating this
        schema takes: the first does it, the others find it done."""
        import psycopg
        try:
            self._migrate_in()
        except psycopg.Error as error:
            said = " ".join(str(error).split())     # (psycopg's are lines: one here)
            raise RuntimeError(f"the PostgreSQL task store at {_safe_url(self.url)} (schema "
                               f"{self.schema}) could not be opened: {said}; start the "
                               "database, or check the URL, the user and its rights") from None

    def _migrate_in(self):
        from psycopg import sql
        with self._conn() as conn:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                             ("a2a_min schema " + self.schema,))
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(self.schema)))
                conn.execute("CREATE TABLE IF NOT EXISTS a2a_meta "
                             "(key text PRIMARY KEY, value text NOT NULL)")
                row = conn.execute("SELECT value FROM a2a_meta WHERE key = 'schema_version'"
                                   ).fetchone()
                version = int(row[0]) if row else 0
                if version > POSTGRES_SCHEMA_VERSION:
                    raise RuntimeError(
                        f"the task store's tables (schema {self.schema}) have schema version "
                        f"{version}, newer than version {POSTGRES_SCHEMA_VERSION} of this "
                        "a2a_postgres: run the a2a_min that wrote them (or a newer one), or "
                        "give this one another schema")
                for step in _MIGRATIONS[version:]:
                    for statement in step:
                        conn.execute(statement)
                conn.execute("INSERT INTO a2a_meta VALUES ('schema_version', %s) ON CONFLICT "
                             "(key) DO UPDATE SET value = excluded.value",
                             (str(POSTGRES_SCHEMA_VERSION),))

    def _transaction(self, work, *args, wait=False):
        """work(conn, *args) in one transaction on a lent connection; its
        result. A deadlock (PostgreSQL chose this transaction to undo) is
        tried again. So is a transaction whose connection broke before it
        asked to commit (nothing of it was written), on a new connection;
        while the database is away (restarting, failing over) it is refused
        at once, unless ``wait``: then tried again for ``write_wait`` seconds
        (an agent's turn rides out a short outage). Any other database error
        becomes the A2AError that says what happened (_failed)."""
        import psycopg
        deadline, pause, deadlocks = time.monotonic() + self.write_wait, 0.05, 0
        while True:
            lent = worked = None
            try:
                with self._conn() as lent:
                    with lent.transaction():
                        result = work(lent, *args)
                        worked = True
                return result
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                deadlocks += 1
                if deadlocks == 3:
                    raise ServerBusyError("the task store (PostgreSQL) was too busy to "
                                          "commit; try again shortly") from None
            except ServerBusyError:         # refused: the database is known to be away
                if not wait or not self._circuit.down or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
            except psycopg.OperationalError as error:
                gone = lent is None or lent.broken or lent.closed
                if worked or not gone or time.monotonic() + pause > deadline:
                    raise self._failed(error) from None
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
            except psycopg.Error as error:
                raise self._failed(error) from None

    def _read(self, query, args=()):
        """The rows of one statement, on a lent connection (once more on
        another if that one had broken)."""
        import psycopg
        for attempt in range(2):
            try:
                with self._conn() as conn:
                    return conn.execute(query, args).fetchall()
            except psycopg.OperationalError as error:
                if attempt:
                    raise self._failed(error) from None
            except psycopg.Error as error:
                raise self._failed(error) from None

    # -- tasks ---------------------------------------------------------------------

    def get(self, task_id, owner):
        """The task with this id if ``owner`` owns it, else None (with .json,
        .version and .next_seq)."""
        rows = self._read(_SQL_GET, (_text(task_id), self._key(owner)))
        if not rows:
            return None
        return _task_of(*rows[0])

    def commit(self, task, owner, version, event=None, caller=None, holder=None,
               derived=False):
        """Write ``task`` over ``version`` (0: a new task) and append ``event``
        to its log, atomically; ``holder`` (of a running task) takes its lease
        for lease_ttl, and an idle task's lease ends. Returns (JSON as stored,
        new version, the event's sequence number or None); ``derived``: only
        the event is written (a2a_min's "A streamed artifact"), and the JSON
        returned is None."""
        task, event = a2a_min._cut_history(task, event, self.max_history)
        if derived:
            seq = self._transaction(self._append_in, _text(task["id"]), self._key(owner),
                                    version, event.json if type(event) is a2a_min._StoredEvent
                                    else a2a_min._dumps(event), wait=True)
            return None, version + 1, seq
        body = a2a_min._dumps(task)
        if event is None:
            event_body = None
        elif type(event) is a2a_min._StoredEvent:
            event_body = event.json
        elif event.get("task") is task and len(event) == 1:
            event_body = b'{"task":' + body + b"}"
        else:
            event_body = a2a_min._dumps(event)
        owner_key = self._key(owner)
        caller_key = owner_key if caller is None else self._key(caller)
        if version == 0 and event_body is None and \
                task["status"]["state"] in a2a_min._IDLE_STATES and self._insert_at_once(
                    task, owner_key, caller_key, body):
            return body, 1, None
        evicted = []
        try:            # (a task's change by its turn waits for a database that went away)
            seq, refused = self._transaction(self._commit_in, task, owner_key, caller_key,
                                             version, body, event_body, holder,
                                             evicted, wait=version > 0)
        finally:
            self._tell_evicted(evicted)
        if refused is not None:
            raise refused
        return body, version + 1, seq

    def _insert_at_once(self, task, owner_key, caller_key, body):
        """The new task in one statement, if it fits (see _SQL_INSERT_AT_ONCE):
        whether it was inserted."""
        import psycopg
        now = int(time.time() * 1000)
        status = task["status"]
        try:
            with self._conn() as conn:
                made, _ = conn.execute(_SQL_INSERT_AT_ONCE, {
                    "id": _text(task["id"]), "owner": owner_key, "caller": caller_key,
                    "context": _text(task.get("contextId", "")), "state": status["state"],
                    "stamp": _text(status.get("timestamp", "")), "now": now, "size": len(body),
                    "body": body, "slot": conn.slot, "max_tasks": self.max_tasks,
                    "max_bytes": self.max_bytes, "max_share": self.max_tasks_per_caller,
                    "max_share_bytes": self.max_bytes_per_caller,
                    "deadline": now - int(self.task_ttl * 1000)}).fetchone()
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
            return False
        except psycopg.OperationalError as error:
            if isinstance(error, psycopg.errors.QueryCanceled):
                raise self._failed(error) from None
            return False    # the database went away: the general way waits for it (write_wait)
        except psycopg.Error as error:
            raise self._failed(error) from None
        return made == 1

    def _commit_in(self, conn, task, owner_key, caller_key, version, body, event_body, holder,
                   evicted):
        """commit()'s transaction: (the event's sequence number or None, the
        TaskStoreFullError that refused the task or None: what was evicted to
        make room stays evicted)."""
        import psycopg
        task_id = _text(task["id"])
        state = task["status"]["state"]
        now = int(time.time() * 1000)
        row = conn.execute(f"SELECT {_TASK_COLUMNS} FROM a2a_tasks WHERE id = %s FOR UPDATE",
                           (task_id,)).fetchone()
        new = row is None
        if version == 0 and not new and event_body is None and row[2] == 1 and \
                row[0] == owner_key and conn.execute(
                    "SELECT body = %s FROM a2a_tasks WHERE id = %s", (body, task_id)).fetchone()[0]:
            return None, None   # _insert_at_once's statement committed, then its connection broke
        stored_version = None
        if new:
            next_seq = first_seq = event_bytes = old_size = config_bytes = 0
            idle_ms = None
        else:
            _, _, stored_version, next_seq, first_seq, event_bytes, old_size, config_bytes, \
                idle_ms, caller_key, appended = row
            if appended:                # events appended alone: now in the body
                newest, size = conn.execute(
                    "SELECT max(seq), sum(length(body)) FROM a2a_events WHERE task_id = %s "
                    "AND seq >= %s", (task_id, next_seq)).fetchone()
                stored_version, next_seq = a2a_store._newest(stored_version, next_seq, newest)
                event_bytes += size or 0
        a2a_min._check_version(task["id"], None if new else (row[0] == owner_key, row[1],
                                                             stored_version), version)
        kept = first_seq
        seq = None
        if event_body is not None:
            seq = next_seq
            next_seq += 1
            first_seq, event_bytes = self._kept(conn, task_id, next_seq, first_seq,
                                                event_bytes + len(event_body))
        size = len(body) + event_bytes + config_bytes
        grows = size - old_size
        tasks, size_all, share_tasks, share_bytes, oldest_idle = conn.execute(
            _SQL_ROOM, {"caller": caller_key}).fetchone()
        counts = {}
        if (tasks + new > self.max_tasks or size_all + grows > self.max_bytes
                or share_tasks + new > self.max_tasks_per_caller
                or share_bytes + grows > self.max_bytes_per_caller
                or oldest_idle is not None and oldest_idle < now - self.task_ttl * 1000):
            try:
                self._make_room((conn, counts), task_id, new, grows, caller_key, now, evicted)
            except a2a_min.TaskStoreFullError as error:
                self._count(conn, counts)       # what was evicted stays evicted
                return None, error
        if state in a2a_min._IDLE_STATES:
            idle_ms = now if idle_ms is None else idle_ms
        else:
            idle_ms = None
        status = task["status"]
        try:
            if new:
                conn.execute(
                    "INSERT INTO a2a_tasks (id, owner, caller, context_id, state, stamp, idle_ms, "
                    "version, next_seq, first_seq, event_bytes, config_bytes, size, body) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, 1, %s, %s, %s, 0, %s, %s)",
                    (task_id, owner_key, caller_key, _text(task.get("contextId", "")), state,
                     _text(status.get("timestamp", "")), idle_ms, next_seq, first_seq, event_bytes, size,
                     body))
            else:
                conn.execute(
                    "UPDATE a2a_tasks SET context_id = %s, state = %s, stamp = %s, idle_ms = %s, "
                    "version = %s, next_seq = %s, first_seq = %s, event_bytes = %s, size = %s, "
                    "body = %s, appended = false WHERE id = %s",
                    (_text(task.get("contextId", "")), state, _text(status.get("timestamp", "")),
                     idle_ms,
                     version + 1, next_seq, first_seq, event_bytes, size, body, task_id))
        except psycopg.errors.UniqueViolation:      # made meanwhile by another writer
            raise ConflictError(f"task {task['id']} exists already",
                                metadata={"taskId": task["id"]}) from None
        if idle_ms is not None:
            if not new:
                conn.execute("DELETE FROM a2a_leases WHERE task_id = %s", (task_id,))
        elif holder is not None:
            conn.execute("INSERT INTO a2a_leases VALUES (%s, %s, %s) ON CONFLICT (task_id) "
                         "DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms",
                         (task_id, holder, now + int(self.lease_ttl * 1000)))
        if event_body is not None:
            conn.execute("INSERT INTO a2a_events (task_id, seq, body) VALUES (%s, %s, %s)",
                         (task_id, seq, event_body))
        if first_seq > kept:
            conn.execute("DELETE FROM a2a_events WHERE task_id = %s AND seq < %s",
                         (task_id, first_seq))
        _add(counts, caller_key, int(new), grows)
        self._count(conn, counts)
        if not new:                     # someone elsewhere may follow it, or run its turn
            conn.execute("SELECT pg_notify(%s, %s)", (self._channel, task_id))
        return seq, None

    def _append_in(self, conn, task_id, owner_key, version, event_body):
        """commit()'s transaction for an event alone (``derived``): the task's
        row is locked, checked and marked ``appended``, not written again
        (a2a_store.SQLiteStore._append_in says why; the bounds count the
        events once the task is written whole again). The event's sequence
        number."""
        row = conn.execute("SELECT owner, state, version, next_seq, appended FROM a2a_tasks "
                           "WHERE id = %s FOR UPDATE", (task_id,)).fetchone()
        stored = None
        if row is not None:
            newest = conn.execute("SELECT max(seq) FROM a2a_events WHERE task_id = %s",
                                  (task_id,)).fetchone()[0] if row[4] else None
            version_now, seq = a2a_store._newest(row[2], row[3], newest)
            stored = (row[0] == owner_key, row[1], version_now)
        a2a_min._check_version(_untext(task_id), stored, version)
        if not row[4]:
            conn.execute("UPDATE a2a_tasks SET appended = true WHERE id = %s", (task_id,))
        conn.execute("INSERT INTO a2a_events (task_id, seq, body) VALUES (%s, %s, %s)",
                     (task_id, seq, event_body))
        conn.execute("SELECT pg_notify(%s, %s)", (self._channel, task_id))
        return seq

    def heads(self, task_ids):
        """{task id: (version, state)} of those of ``task_ids`` still stored
        (as a2a_store.SQLiteStore.heads), in one statement."""
        rows = self._read(
            "SELECT id, version, next_seq, CASE WHEN appended THEN (SELECT max(seq) FROM "
            "a2a_events WHERE task_id = a2a_tasks.id) END, state FROM a2a_tasks "
            "WHERE id = ANY(%s)", ([_text(task_id) for task_id in task_ids],))
        return {_untext(task_id): (a2a_store._newest(version, next_seq, newest)[0], state)
                for task_id, version, next_seq, newest, state in rows}

    def _kept(self, conn, task_id, next_seq, first_seq, event_bytes):
        """The log's bounds once its oldest events go while it is past one (the
        new event always stays): the new (first kept seq, bytes kept)."""
        if next_seq - first_seq <= self.replay_buffer and event_bytes <= self.replay_buffer_bytes:
            return first_seq, event_bytes
        for old_seq, old_bytes in conn.execute(
                "SELECT seq, length(body) FROM a2a_events WHERE task_id = %s ORDER BY seq",
                (task_id,)).fetchall():
            if next_seq - first_seq <= self.replay_buffer and \
                    event_bytes <= self.replay_buffer_bytes:
                break
            first_seq, event_bytes = old_seq + 1, event_bytes - old_bytes
        return first_seq, event_bytes

    # (the steps of a2a_min._Bounds._make_room, in SQL inside commit's
    # transaction: ``ctx`` is (the connection, the counts it will add:
    # {caller: (tasks, bytes)}); times in milliseconds)

    def _expire(self, ctx, now, task_id, evicted):
        conn, counts = ctx
        deadline = now - int(self.task_ttl * 1000)
        while True:
            gone = conn.execute(_SQL_EXPIRED, (deadline, task_id)).fetchall()
            for gone_id, gone_caller, gone_size in gone:
                evicted.append(_untext(gone_id))
                _add(counts, gone_caller, -1, -gone_size)
            if len(gone) < 64:
                break

    def _held(self, ctx, caller):
        conn, counts = ctx
        tasks, size, share_tasks, share_bytes, _ = conn.execute(
            _SQL_ROOM, {"caller": caller}).fetchone()
        everyone, mine = counts.get("", (0, 0)), counts.get(caller, (0, 0))
        return tasks + everyone[0], size + everyone[1], share_tasks + mine[0], share_bytes + mine[1]

    def _idle_batch(self, ctx, task_id, caller):
        if caller is None:
            return ctx[0].execute(_SQL_IDLE, (task_id,)).fetchall()
        return ctx[0].execute(_SQL_CALLER_IDLE, (caller, task_id)).fetchall()

    def _evict(self, ctx, task_ids, evicted):
        conn, counts = ctx
        for gone_id, gone_caller, gone_size in conn.execute(
                "DELETE FROM a2a_tasks WHERE id = ANY(%s) RETURNING id, caller, size",
                (task_ids,)).fetchall():
            evicted.append(_untext(gone_id))
            _add(counts, gone_caller, -1, -gone_size)

    @staticmethod
    def _count(conn, counts):
        """Add ``counts`` ({caller: (tasks, bytes)}, '' included) to this
        connection's rows of a2a_counts, in one statement (callers in order:
        two transactions never wait for each other's rows in turn)."""
        rows = [(caller, conn.slot, tasks, size) for caller, (tasks, size) in sorted(counts.items())
                if tasks or size]
        if rows:
            conn.execute(
                "INSERT INTO a2a_counts (caller, slot, tasks, bytes) SELECT * FROM "
                "unnest(%s::text[], %s::integer[], %s::bigint[], %s::bigint[]) ON CONFLICT "
                "(caller, slot) DO UPDATE SET tasks = a2a_counts.tasks + excluded.tasks, "
                "bytes = a2a_counts.bytes + excluded.bytes",
                [list(column) for column in zip(*rows)])

    def _tell_evicted(self, evicted):
        if self.on_evict:
            for gone in evicted:
                self.on_evict(gone)

    def delete(self, task_id):
        """Forget a task, its events, configs and lease (no error if unknown)."""
        def work(conn):
            counts = {}
            for caller, size in conn.execute("DELETE FROM a2a_tasks WHERE id = %s "
                                             "RETURNING caller, size", (_text(task_id),)
                                             ).fetchall():
                _add(counts, caller, -1, -size)
            self._count(conn, counts)
        self._transaction(work)

    def events(self, task_id, after=-1):
        """(oldest kept seq, [(seq, event), ...] with seq > after), or None if
        the task is not stored. One statement: one consistent snapshot."""
        rows = self._read(
            "SELECT t.first_seq, e.seq, e.body FROM a2a_tasks AS t LEFT JOIN a2a_events AS e "
            "ON e.task_id = t.id AND e.seq > %s WHERE t.id = %s ORDER BY e.seq",
            (after, _text(task_id)))
        if not rows:
            return None
        return rows[0][0], [(seq, a2a_min._StoredEvent.decode(bytes(body)))
                            for _, seq, body in rows if seq is not None]

    @property
    def live_tasks(self):
        """As SQLiteStore's: a Server's live tasks on a shared store."""
        return a2a_store.SharedLiveTasks

    def changed(self):
        """A number that moves when a task others may follow changed: the
        notifications this process's listener heard (its reconnects count
        too), and the time in ``poll`` seconds, so that a lost notification
        delays a stream by ``poll`` at most. Without a listener, a new number
        every time (streams look at the store every store_poll)."""
        if not self.listen:
            self._asked += 1
            return self._asked
        listener = self._listener
        if listener is None or listener.pid != os.getpid() or listener.stopped:
            with self._lock:
                listener = self._listener
                if listener is None or listener.pid != os.getpid() or listener.stopped:
                    listener = self._listener = _Listener(self)
        return listener.heard + int(time.monotonic() / self.poll)

    def wake_on(self, wake):
        """Call ``wake(task_id)`` whenever the listener hears a notification,
        from its thread: the Server wakes that task's streams here at once,
        and its watch thread looks at the store (a stream here hears of a
        commit elsewhere in a few milliseconds, not store_poll)."""
        self._wakers.append(wake)

    def touched(self):
        """The ids of the tasks whose change the listener heard of since the
        last call (each NOTIFY names its task), or None where that is not
        known: no listener, one that (re)connected meanwhile (whatever was
        sent while nobody listened is lost), or a new ``poll`` tick (a look
        at every task followed here, in case). The store watch then reads
        the heads of those tasks only."""
        listener = self._listener
        if listener is None or listener.pid != os.getpid():
            return None
        with listener.lock:
            ids, listener.touched = listener.touched, set()
        tick = int(time.monotonic() / self.poll)
        if tick != self._tick:
            self._tick = tick
            return None
        return ids

    def list(self, owner, *, context_id=None, status=None, after=None, cursor=None, limit=50):
        """One page of the owner's tasks, newest status first (as
        a2a_min.TaskStore.list); the count and the page from one snapshot."""
        where, args = "owner = %s", [self._key(owner)]
        if context_id:
            where += " AND context_id = %s"
            args.append(_text(context_id))
        if status:
            where += " AND state = %s"
            args.append(status)
        if after:
            where += " AND stamp >= %s"
            args.append(_text(after))
        page_where, page_args = where, list(args)
        if cursor is not None:
            page_where += " AND (stamp, id) < (%s, %s)"
            page_args += [_text(cursor[0]), _text(cursor[1])]

        def work(conn):
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            total = conn.execute("SELECT count(*) FROM a2a_tasks WHERE " + where,
                                 args).fetchone()[0]
            page, size, more = [], 0, False
            cursor_ = conn.execute("SELECT stamp, id, version, next_seq, body, " + _APPENDED
                                   + " FROM a2a_tasks WHERE " + page_where
                                   + " ORDER BY stamp DESC, id DESC LIMIT %s",
                                   page_args + [limit + 1])
            for stamp, task_id, *row in cursor_:
                size += len(row[2])
                if len(page) == limit or page and size > self.max_page_bytes:
                    more = True
                    break
                page.append((stamp, task_id, row))
            return total, page, more
        total, page, more = self._transaction(work)
        tasks = [_task_of(*row) for _, _, row in page]
        return tasks, total, ((_untext(page[-1][0]), _untext(page[-1][1])) if more else None)

    def stats(self):
        """What the store holds: tasks, bytes, idle tasks and callers, and its
        outages (while one lasts, only what this process knows)."""
        limits = {"max_tasks": self.max_tasks, "max_bytes": self.max_bytes}
        try:
            tasks, size, idle, callers = self._read(
                "SELECT coalesce(sum(tasks) FILTER (WHERE caller = ''), 0), "
                "coalesce(sum(bytes) FILTER (WHERE caller = ''), 0), "
                "(SELECT count(*) FROM a2a_tasks WHERE idle_ms IS NOT NULL), "
                "(SELECT count(*) FROM (SELECT caller FROM a2a_counts WHERE caller <> '' "
                "GROUP BY caller HAVING sum(tasks) > 0) AS c) FROM a2a_counts")[0]
        except ServerBusyError:
            return {**limits, **self._circuit.stats()}
        return {"tasks": int(tasks), "bytes": int(size), "idle": idle, "callers": callers,
                **limits, **self._circuit.stats()}

    # -- push notification configs: stored with the task, deleted with it ----------------

    def put_config(self, task_id, config, max_configs):
        """Insert, or replace by config["id"] (keeping its place in the order);
        TaskNotFoundError if the task is gone. Its bytes count in the task's size,
        within the bounds: past one, idle tasks are evicted as for a commit, or
        the config is refused (CallerLimitError, TaskStoreFullError)."""
        body = a2a_min._dumps(config)
        shown, task_id, config_id = task_id, _text(task_id), _text(config["id"])
        evicted = []

        def work(conn):
            row = conn.execute("SELECT caller FROM a2a_tasks WHERE id = %s FOR UPDATE",
                               (task_id,)).fetchone()
            if row is None:
                raise a2a_min._no_longer_stored(shown)
            count, old = conn.execute(
                "SELECT count(*), max(length(body)) FILTER (WHERE id = %s) FROM a2a_push_configs "
                "WHERE task_id = %s", (config_id, task_id)).fetchone()
            if old is None and count >= max_configs:
                raise a2a_min._too_many_configs(shown, count)
            grows, counts = len(body) - (old or 0), {}
            _, size, _, share, _ = conn.execute(_SQL_ROOM, {"caller": row[0]}).fetchone()
            if size + grows > self.max_bytes or share + grows > self.max_bytes_per_caller:
                del evicted[:]                  # (a transaction tried again starts afresh)
                self._make_room((conn, counts), task_id, 0, grows, row[0],
                                int(time.time() * 1000), evicted)
                self._count(conn, counts)
            conn.execute("INSERT INTO a2a_push_configs (task_id, id, body) VALUES (%s, %s, %s) "
                         "ON CONFLICT (task_id, id) DO UPDATE SET body = excluded.body",
                         (task_id, config_id, body))
            self._resize(conn, task_id, row[0], grows)
        self._transaction(work)
        self._tell_evicted(evicted)

    def _resize(self, conn, task_id, caller, grows):
        if grows:
            conn.execute("UPDATE a2a_tasks SET config_bytes = config_bytes + %s, "
                         "size = size + %s WHERE id = %s", (grows, grows, task_id))
            self._count(conn, {"": (0, grows), caller: (0, grows)})

    def get_config(self, task_id, config_id):
        rows = self._read("SELECT body FROM a2a_push_configs WHERE task_id = %s AND id = %s",
                          (_text(task_id), _text(config_id)))
        return json.loads(bytes(rows[0][0])) if rows else None

    def configs(self, task_id):
        """The task's configs, in the order they were first put."""
        return [json.loads(bytes(row[0])) for row in self._read(
            "SELECT body FROM a2a_push_configs WHERE task_id = %s ORDER BY n", (_text(task_id),))]

    def delete_config(self, task_id, config_id):
        task_id, config_id = _text(task_id), _text(config_id)

        def work(conn):
            row = conn.execute("SELECT caller FROM a2a_tasks WHERE id = %s FOR UPDATE",
                               (task_id,)).fetchone()
            gone = conn.execute("DELETE FROM a2a_push_configs WHERE task_id = %s AND id = %s "
                                "RETURNING length(body)", (task_id, config_id)).fetchone()
            if row is not None and gone is not None:
                self._resize(conn, task_id, row[0], -gone[0])
        self._transaction(work)

    # -- leases: which process runs a task's agent ---------------------------------------

    def renew(self, holder):
        """Extend every lease ``holder`` has by ``lease_ttl`` from now."""
        self._transaction(lambda conn: conn.execute(
            "UPDATE a2a_leases SET expires_ms = %s WHERE holder = %s",
            (int((time.time() + self.lease_ttl) * 1000), holder)))

    def expired(self):
        """[(task id, owner)] of the running tasks whose lease ran out."""
        rows = self._read(
            "SELECT l.task_id, t.owner FROM a2a_leases AS l JOIN a2a_tasks AS t "
            "ON t.id = l.task_id WHERE l.expires_ms < %s AND t.idle_ms IS NULL",
            (int(time.time() * 1000),))
        return [(_untext(task_id), tuple(json.loads(owner))) for task_id, owner in rows]

    # -- idempotent sends: a send's key, for every server (a2a_min's claim_send) ----------

    def claim_send(self, owner, key, task_id, window):
        """None the first time ``owner`` sends ``key`` within ``window`` seconds
        (recorded, with the ``task_id`` it makes or continues); for a repeat,
        the first's (task id, reply, digest). Of the sessions claiming one
        key at once, exactly one is first (_SQL_CLAIM_SEND)."""
        now = time.time()               # (wall-clock: every server must agree)
        args = {"owner": self._key(owner), "key": _text(key), "task": _text(task_id),
                "now": now, "dead": now - window}

        def work(conn):
            for _ in range(3):              # (the row is locked: once is enough)
                if conn.execute(_SQL_CLAIM_SEND, args).fetchone()[0]:
                    return None
                first = conn.execute("SELECT task_id, reply, digest FROM a2a_sends WHERE "
                                     "owner = %(owner)s AND key = %(key)s", args).fetchone()
                if first is not None:
                    return list(first)
            raise ServerBusyError("the task store (PostgreSQL) was too busy to record this "
                                  "send; try again shortly")
        first = self._transaction(work)
        if first is not None:
            first[0] = _untext(first[0])
            if first[1] is not None:
                first[1] = json.loads(bytes(first[1]))
        return first and tuple(first)

    def settle_send(self, owner, key, reply, digest=None):
        """The first send of ``key`` answered with the Message ``reply``, kept
        for its repeats with ``digest``, its message's (or, None, was refused:
        the key is free again)."""
        where = (self._key(owner), _text(key))
        if reply is None:
            self._transaction(lambda conn: conn.execute(
                "DELETE FROM a2a_sends WHERE owner = %s AND key = %s", where))
        else:                           # (a turn's write: it waits out a short outage)
            self._transaction(lambda conn: conn.execute(
                "UPDATE a2a_sends SET reply = %s, digest = %s WHERE owner = %s AND key = %s",
                (a2a_min._dumps(reply), digest) + where), wait=True)

    def close(self):
        """Close this process's idle connections and stop its listener (also
        done when the store is garbage: a store nobody uses holds nothing).
        A store used again after close() opens what it needs again."""
        _close(self._idle, self._listener)

    def __del__(self):
        try:
            _close(self._idle, self._listener)
        except Exception:           # (at interpreter exit, say: nothing to do then)
            pass


def _close(idle, listener):
    pid, connections = idle
    if pid == os.getpid():
        while connections:
            connections.pop().close()
    if listener is not None:
        listener.stopped = True


class _Listener:
    """One process's LISTEN connection on a store's channel, in a thread of
    its own. Every notification, and every reconnect (whatever was sent
    while nobody listened is lost), adds to ``heard``. It holds what it
    needs of the store, not the store: a store nobody uses is garbage, and
    its listener stops (``stopped``) within ``poll`` seconds."""

    def __init__(self, store):
        self.url, self.channel, self.poll = store.url, store._channel, store.poll
        self.wakers = store._wakers         # (the list, not the store)
        self.circuit = store._circuit       # told when the database is away, and back
        self.connect_timeout = max(1, round(store.connect_timeout))
        self.pid, self.heard, self.connected, self.stopped = os.getpid(), 0, False, False
        self.lock = threading.Lock()
        self.touched = None                 # ids of the tasks notified (None: not known)
        threading.Thread(target=self._run, name="a2a-postgres-listen", daemon=True).start()

    def _run(self):
        import psycopg
        from psycopg import sql
        backoff = 0.1
        while not self.stopped and os.getpid() == self.pid:
            conn, began = None, time.monotonic()
            try:
                conn = psycopg.connect(self.url, autocommit=True,
                                       connect_timeout=self.connect_timeout)
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                self.connected, backoff = True, 0.1
                if self.circuit.down:
                    self.circuit.closed()
                self._lost()                    # (what was sent while nobody listened)
                while not self.stopped:
                    for notify in conn.notifies(timeout=self.poll):
                        task_id = _untext(notify.payload)
                        with self.lock:
                            if self.touched is not None:
                                self.touched.add(task_id)
                        self.heard += 1
                        for wake in self.wakers:
                            wake(task_id)
            except psycopg.Error as error:
                if not self.connected and not self.stopped:     # it cannot connect: away
                    self.circuit.opened(f"{_safe_url(self.url)}: {str(error).strip()}; start "
                                        "it, or check the URL and the network", began)
                self.connected = False
                self._lost()
                time.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                if conn is not None and os.getpid() == self.pid:
                    conn.close()

    def _lost(self):
        """Notifications may have been lost: the next look is at everything."""
        with self.lock:
            self.touched = None
        self.heard += 1


def _task_of(version, next_seq, body, appended):
    """The task of a row (its version, next_seq and body) and the events
    appended alone after it (None: none), with .json, .version and .next_seq."""
    if not appended:
        task = a2a_min._StoredTask.decode(bytes(body))
        task.version, task.next_seq = version, next_seq
        return task
    task = a2a_min._with_pending(json.loads(bytes(body)), [
        json.loads(bytes(event))["artifactUpdate"] for event in appended])
    task.version, task.next_seq = a2a_store._newest(version, next_seq,
                                                  next_seq + len(appended) - 1)
    return task


def _text(value):
    """A string as a text column holds it: PostgreSQL's text cannot hold NUL,
    which a client's contextId or push config id may. Backslashes are
    doubled and NUL written \\0: equal strings stay equal, different ones
    different (_untext undoes it)."""
    if "\\" in value or "\x00" in value:
        return value.replace("\\", "\\\\").replace("\x00", "\\0")
    return value


def _untext(value):
    if "\\" not in value:
        return value
    import re
    return re.sub(r"\\([\\0])", lambda m: "\x00" if m.group(1) == "0" else "\\", value)


def _add(counts, caller, tasks, size):
    """Add (tasks, size) to ``counts`` for ``caller`` and for everyone ('')."""
    for who in ("", caller):
        had = counts.get(who, (0, 0))
        counts[who] = (had[0] + tasks, had[1] + size)


def _safe_url(url):
    """The URL without its password, for the log."""
    from urllib.parse import urlsplit, urlunsplit
    try:
        parts = urlsplit(url)
        if parts.password is not None:
            host = parts.hostname or ""
            netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
            return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        pass
    return url if "password" not in url else "(a connection string with a password)"
