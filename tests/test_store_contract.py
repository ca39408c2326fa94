"""The store contract (a2a_min.py section 4, "The task store"), held against
the three stores that implement it: TaskStore (in memory), SQLiteStore (a
file that processes share, a2a_store.py) and PostgresStore (a2a_postgres.py),
eviction and shares included (one policy: _Bounds._make_room). Every test of
the first part takes ``store`` or ``make_store`` and runs once per backend, as
tinydb runs its tests over its storages: what a Server may rely on is the
same, whichever store it has.

What the contract promises:

- commit() writes a task over the version it was read at (0: a new task) and
  appends its event, as one change; a stale version, a task made twice, or
  someone else's task is a ConflictError, a terminal task an
  UnsupportedOperationError (it never changes again);
- commit(..., derived=True) may keep an artifactUpdate alone, without the
  task (a streamed artifact's chunk): readers see the same task either way;
- get() answers the owner only (anyone else's task reads as missing);
- events() numbers a task's events 0, 1, 2... for its whole life and keeps
  the newest (``replay_buffer`` of them, ``replay_buffer_bytes`` of JSON, the
  newest one always);
- list() pages newest status timestamp first, ties by id, with a keyset
  cursor that stays valid whatever changes between pages;
- push configs, events and the lease go with their task;
- a running task's commit names its lease holder; renew() extends it and
  expired() names the tasks whose holder stopped renewing;
- the store is bounded (TTL, tasks, bytes, each caller's share), evicting the
  oldest idle tasks first, telling ``on_evict``, and refusing a new task
  rather than dropping a running one;
- claim_send() records the first send of an owner's key for ``window``
  seconds, and gives every repeat the first's task id, and its reply and
  digest (settle_send()); exactly one of the sends racing for a key is
  first, whichever process; nothing takes over a first before its window ends.

Where the backends may differ, the tests hold them to the common promise,
not to a number: how many bytes a task and its events are counted for
(memory counts their JSON, a fixed overhead per task and event, and a
running task's live copy; SQLite the JSON on disk), and changed() (0 in memory, where nobody else writes; SQLite's
data_version, which only another connection's commit moves).

The second part, "SQLite only", is what only a shared file has: its mode,
schema versions, damaged, read-only and full files, URLs, a busy lock, other
connections and processes (fork). The property test of ListTasks paging
under concurrent changes is in test_store_paging.py.
"""

import json
import os
import select
import signal
import sqlite3
import stat
import threading
import time

import pytest

import a2a_min
import a2a_store
from conftest import postgres_server, postgres_store
from harness import MemoryTaskStore, need
from a2a_min import (CallerLimitError, ConflictError, InternalError, InvalidParamsError,
                     ServerBusyError, TaskStoreFullError, UnsupportedOperationError)

ALICE = ("", "alice")
BOB = ("", "bob")
WORKING, COMPLETED = "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"

# A2A_TEST_STORE=sqlite (conftest.py) replaces a2a_min.TaskStore by a maker of
# SQLiteStores for the whole run; the memory backend is then not to be had.
_MEMORY = MemoryTaskStore          # (even when A2A_TEST_STORE=sqlite replaced TaskStore)


def task(task_id, state=WORKING, stamp=0, context="ctx", **fields):
    """A Task dict as the Server stores it; ``stamp`` is a second of the day."""
    return {"id": task_id, "contextId": context,
            "status": {"state": state, "timestamp": _stamp(stamp)}, **fields}


def _stamp(second):
    """Status timestamps as the server writes them: fixed width, so they sort as text."""
    return "2025-01-01T00:%02d:%02d.000Z" % divmod(second, 60)


def _key(t):
    return t["status"]["timestamp"], t["id"]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request):
    if request.param == "postgres":
        postgres_server()           # (or a skip saying what is missing)
    return request.param


@pytest.fixture
def make_store(backend, tmp_path):
    """make_store(**limits): a new, empty store of this backend (each SQLite one
    in a file of its own)."""
    files = iter(range(1000))

    def make(**limits):
        if backend == "memory":
            return _MEMORY(**limits)
        if backend == "postgres":
            return postgres_store(**limits)
        return a2a_store.SQLiteStore(str(tmp_path / f"tasks{next(files)}.db"), **limits)
    make.memory = backend == "memory"
    return make


@pytest.fixture
def store(make_store):
    return make_store()


def _evictions(store):
    """The ids on_evict is told of, in order."""
    gone = []
    store.on_evict = gone.append
    return gone


# =============================================================================
# Part 1: the contract, on both backends
# =============================================================================

# -- tasks and versions ------------------------------------------------------------------

def test_a_new_task_is_written_at_version_0_and_read_back_by_its_owner_only(store, backend):
    """commit(version=0) makes the task at version 1 and returns the JSON it
    stored; get() gives it, with that JSON, to its owner, and None to anyone
    else, exactly as for a task that does not exist."""
    assert store.shared is (backend != "memory")
    t = task("t1", history=[{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}])
    body, version, seq = store.commit(t, ALICE, 0, {"task": t})
    assert (json.loads(body), version, seq) == (t, 1, 0)
    got = store.get("t1", ALICE)
    assert got == t and got.json == body and (got.version, got.next_seq) == (1, 1)
    assert store.get("t1", BOB) is None and store.get("nope", ALICE) is None
    _, version, seq = store.commit(task("t2"), ALICE, 0)       # no event: no sequence number
    assert (version, seq) == (1, None) and store.get("t2", ALICE).next_seq == 0


def test_every_commit_is_a_new_version_and_every_event_the_next_seq(store):
    """The version counts commits; next_seq counts events, with or without
    commits between them. A task read again after a change is the new one."""
    version = 0
    for i in range(6):
        event = {"statusUpdate": {"n": i}} if i % 2 == 0 else None
        body, new_version, seq = store.commit(task("t1", stamp=i), ALICE, version, event)
        assert new_version == version + 1 and seq == (i // 2 if event else None)
        version = new_version
        got = store.get("t1", ALICE)
        assert got.version == version and got.json == body and got == task("t1", stamp=i)
        assert got.next_seq == i // 2 + 1


def test_a_task_made_twice_is_a_conflict(store):
    """version 0 on an id that exists, whoever owns it, is a ConflictError (an
    UnsupportedOperationError), and the stored task is left as it was."""
    store.commit(task("t1"), ALICE, 0, {"statusUpdate": {}})
    for owner in (ALICE, BOB):
        with pytest.raises(ConflictError) as caught:
            store.commit(task("t1", context="other"), owner, 0, {"statusUpdate": {}})
        assert isinstance(caught.value, UnsupportedOperationError)
    got = store.get("t1", ALICE)
    assert got["contextId"] == "ctx" and got.version == 1
    assert [seq for seq, _ in store.events("t1")[1]] == [0]


def test_a_stale_version_or_a_task_gone_is_a_conflict(store):
    """A writer that read an older version, writes someone else's task, or
    writes a task deleted meanwhile gets ConflictError; nothing is written and
    no event appended."""
    store.commit(task("t1"), ALICE, 0)
    store.commit(task("t1", stamp=1), ALICE, 1, {"statusUpdate": {}})
    for owner, version in ((ALICE, 1), (ALICE, 3), (BOB, 2)):
        with pytest.raises(ConflictError):
            store.commit(task("t1", stamp=9), owner, version, {"statusUpdate": {"lost": 1}})
    got = store.get("t1", ALICE)
    assert got.version == 2 and got == task("t1", stamp=1)
    assert store.events("t1") == (0, [(0, {"statusUpdate": {}})])
    store.delete("t1")
    with pytest.raises(ConflictError):
        store.commit(task("t1"), ALICE, 2)
    assert store.get("t1", ALICE) is None and store.events("t1") is None


def test_a_terminal_task_never_changes_again(store):
    """Over a terminal task, a commit at its version or an older one is an
    UnsupportedOperationError that is not a ConflictError (reading again
    would not help); the task and its events stay as they ended."""
    store.commit(task("t1"), ALICE, 0)
    store.commit(task("t1", COMPLETED), ALICE, 1, {"statusUpdate": {}})
    for version in (2, 1):
        with pytest.raises(UnsupportedOperationError) as caught:
            store.commit(task("t1"), ALICE, version, {"statusUpdate": {}})
        assert not isinstance(caught.value, ConflictError)
    assert store.get("t1", ALICE)["status"]["state"] == COMPLETED
    assert [seq for seq, _ in store.events("t1")[1]] == [0]


def test_history_is_cut_to_the_newest_max_history_messages(make_store):
    store = make_store(max_history=3)
    t = task("t1", history=[{"messageId": str(i), "role": "ROLE_USER", "parts": []}
                            for i in range(5)])
    body, _, _ = store.commit(t, ALICE, 0)
    assert [m["messageId"] for m in json.loads(body)["history"]] == ["2", "3", "4"]
    assert store.get("t1", ALICE)["history"] == json.loads(body)["history"]


def test_the_task_event_of_a_cut_history_is_the_task_as_stored(make_store, backend, request):
    """A {"task": ...} event replays the task as it was stored, history cut."""
    store = make_store(max_history=2)
    t = task("t1", history=[{"messageId": str(i)} for i in range(5)])
    store.commit(t, ALICE, 0, {"task": t})
    assert store.events("t1")[1][0][1]["task"]["history"] == [{"messageId": "3"},
                                                              {"messageId": "4"}]


def test_concurrent_writers_lose_no_update(store):
    """Threads that read, change and commit the same task, retrying on
    ConflictError, all get through: one version per commit, the events
    numbered without a gap, each writer's in its own order."""
    store.commit(task("t1", history=[]), ALICE, 0)
    errors = []

    def write(name):
        try:
            for i in range(25):
                _append_until_committed(store, name, i, "by")
        except Exception as error:        # reported below
            errors.append(error)
    threads = [threading.Thread(target=write, args=(n,)) for n in "abcd"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.get("t1", ALICE).version == 101
    oldest, events = store.events("t1")
    assert oldest == 0 and [seq for seq, _ in events] == list(range(100))
    for name in "abcd":
        assert [e["statusUpdate"]["i"] for _, e in events
                if e["statusUpdate"]["by"] == name] == list(range(25))
    assert len(store.get("t1", ALICE)["history"]) == 100


# -- events ------------------------------------------------------------------------------

def test_events_are_numbered_from_0_and_read_after_a_seq(store):
    """events(task, after) gives the kept events with a greater seq, oldest
    first, as they were committed; past the newest, none; a task without
    events has none and its oldest is the next seq (0); a task not stored: None."""
    store.commit(task("t2"), ALICE, 0)
    assert store.events("t2") == (0, [])
    version = 0
    for i in range(5):
        _, version, seq = store.commit(task("t1"), ALICE, version, {"statusUpdate": {"n": i}})
        assert seq == i
    oldest, kept = store.events("t1")
    assert oldest == 0 and kept == [(i, {"statusUpdate": {"n": i}}) for i in range(5)]
    assert store.events("t1", after=2) == (0, kept[3:])
    assert store.events("t1", after=4) == (0, []) == store.events("t1", after=99)
    assert store.events("missing") is None and store.events("missing", after=3) is None


def test_the_replay_buffer_keeps_the_newest_events_by_count(make_store):
    """Past ``replay_buffer`` events the oldest go; the numbers go on, and
    ``oldest`` says where the kept ones start."""
    store = make_store(replay_buffer=5)
    version = 0
    for i in range(12):
        _, version, seq = store.commit(task("t1"), ALICE, version, {"statusUpdate": {"n": i}})
        assert seq == i
    oldest, kept = store.events("t1")
    assert oldest == 7 and kept == [(i, {"statusUpdate": {"n": i}}) for i in range(7, 12)]
    assert store.events("t1", after=9) == (7, kept[3:])
    assert store.events("t1", after=2) == (7, kept)        # asked from before the oldest
    assert store.get("t1", ALICE).next_seq == 12


def test_the_replay_buffer_keeps_the_newest_events_by_bytes(make_store):
    """Past ``replay_buffer_bytes`` the oldest events go, however each backend
    counts an event's bytes: what is kept is the newest events, without a
    gap, and the newest one always, even alone past the bound."""
    store = make_store(replay_buffer=100, replay_buffer_bytes=2000)
    version = 0
    for i in range(30):
        _, version, _ = store.commit(task("t1"), ALICE, version,
                                     {"statusUpdate": {"pad": "x" * 300, "n": i}})
    oldest, kept = store.events("t1")
    seqs = [seq for seq, _ in kept]
    assert 0 < oldest == seqs[0] and seqs == list(range(oldest, 30)) and 1 < len(seqs) < 10
    big = task("t1", pad="y" * 5000)
    _, version, seq = store.commit(big, ALICE, version, {"task": big})
    assert seq == 30 and store.events("t1") == (30, [(30, {"task": big})])
    _, _, seq = store.commit(task("t1"), ALICE, version, {"statusUpdate": {"n": 31}})
    oldest, kept = store.events("t1")
    assert [s for s, _ in kept][-1] == 31 and oldest == kept[0][0] >= 30


def test_events_written_alone_are_read_with_their_task(make_store, backend, tmp_path):
    """commit(..., derived=True): the task given is the stored one with the
    event (an artifactUpdate) applied, and the store keeps the event alone,
    without writing the task (its JSON returned is None): how a streamed
    artifact costs what it streams, not the square of its chunks. Readers
    see the same as if it had been written whole: get() and list() apply
    the events, version and next_seq move as for any commit, events() has
    them all (past replay_buffer too, while the task needs them), and a
    stale version is refused. The next whole commit takes them in, and
    deleting the task takes them with it."""
    store = make_store(replay_buffer=2)
    ids = {"taskId": "t", "contextId": "ctx"}

    def appended(t, i):
        update = {**ids, "append": i > 0, "artifact": {"artifactId": "a", "parts": [
            {"text": str(i)}]}}
        parts = t["artifacts"][0]["parts"] + [{"text": str(i)}] if i else [{"text": "0"}]
        return {**t, "artifacts": [{"artifactId": "a", "parts": parts}]}, \
            {"artifactUpdate": update}
    t, event = appended(task("t"), 0)
    _, version, _ = store.commit(t, ALICE, 0, event)
    for i in range(1, 6):
        t, event = appended(t, i)
        stored, version, seq = store.commit(t, ALICE, version, event, derived=True)
        assert stored is None and seq == i and version == i + 1
    got = store.get("t", ALICE)
    assert got == t and (got.version, got.next_seq) == (6, 6)
    assert store.get("t", BOB) is None
    if store.shared:                    # (what the store watch reads, in one statement)
        assert store.heads(["t", "missing"]) == {"t": (6, WORKING)}
    assert store.list(ALICE)[0] == [t]
    seqs = [seq for seq, _ in store.events("t")[1]]     # (at least the newest replay_buffer)
    assert seqs == list(range(seqs[0], 6)) and seqs[0] <= 4
    assert store.events("t", 3)[1] == [(i, appended(t, i)[1]) for i in (4, 5)]
    _, event = appended(t, 9)
    with pytest.raises(ConflictError):
        store.commit(t, ALICE, 5, event, derived=True)
    with pytest.raises(ConflictError):
        store.commit(t, ALICE, 5)
    done = {**t, "status": {"state": COMPLETED, "timestamp": _stamp(1)}}
    stored, version, seq = store.commit(done, ALICE, 6, {"statusUpdate": {"n": 6}})
    assert stored is not None and (version, seq) == (7, 6)
    got = store.get("t", ALICE)
    assert got == done and (got.version, got.next_seq) == (7, 7)
    if store.shared:
        assert store.heads(["t"]) == {"t": (7, COMPLETED)}
    assert store.list(ALICE)[0] == [done]
    assert [seq for seq, _ in store.events("t")[1]] == [5, 6]        # replay_buffer again
    store.delete("t")
    assert store.events("t") is None and store.stats()["tasks"] == 0
    if backend == "sqlite":
        with sqlite3.connect(store.path) as db:
            assert db.execute("SELECT count(*) FROM events").fetchone() == (0,)


# -- list ----------------------------------------------------------------------------------

def _fill(store, count=57):
    """``count`` tasks of ALICE on five timestamps (many equal), half in
    context "even", half in "odd"; one of BOB's. Returns ALICE's keys, newest first."""
    for i in range(count):
        store.commit(task("t%02d" % i, stamp=i % 5, context="even" if i % 2 == 0 else "odd"),
                     ALICE, 0)
    store.commit(task("bobs", stamp=9), BOB, 0)
    return sorted(((_stamp(i % 5), "t%02d" % i) for i in range(count)), reverse=True)


def test_list_pages_newest_first_then_by_id_with_a_keyset_cursor(store):
    """Pages follow (status timestamp, id), descending; each page's cursor is
    its last task's key, the last page's None; total counts every match
    whatever the cursor; nobody sees another owner's tasks."""
    expected = _fill(store)
    seen, cursor = [], None
    while True:
        tasks, total, cursor = store.list(ALICE, cursor=cursor, limit=7)
        assert total == 57 and 1 <= len(tasks) <= 7
        seen += [_key(t) for t in tasks]
        if cursor is None:
            break
        assert tuple(cursor) == seen[-1] and len(tasks) == 7
    assert seen == expected
    assert store.list(ALICE, limit=57) == (store.list(ALICE, limit=100)[0], 57, None)
    tasks, total, cursor = store.list(ALICE, limit=56)
    assert len(tasks) == 56 and tuple(cursor) == expected[55]
    assert store.list(BOB)[1] == 1 and store.list(("", None)) == ([], 0, None)
    assert store.list(ALICE, cursor=expected[-1]) == ([], 57, None)


def test_list_filters_by_context_status_and_timestamp(store):
    """context_id and status match exactly, ``after`` keeps tasks at or after
    a timestamp; filters combine; total counts the matches."""
    _fill(store)
    tasks, total, cursor = store.list(ALICE, context_id="odd", limit=100)
    assert total == len(tasks) == 28 and cursor is None
    assert all(t["contextId"] == "odd" for t in tasks)
    tasks, total, _ = store.list(ALICE, after=_stamp(3), limit=100)
    assert total == len(tasks) == 22 and all(_key(t)[0] >= _stamp(3) for t in tasks)
    store.commit(task("t00", COMPLETED, stamp=0, context="even"), ALICE, 1)
    store.commit(task("t03", COMPLETED, stamp=3, context="odd"), ALICE, 1)
    tasks, total, _ = store.list(ALICE, status=COMPLETED)
    assert total == 2 and [t["id"] for t in tasks] == ["t03", "t00"]
    tasks, total, _ = store.list(ALICE, status=COMPLETED, context_id="even")
    assert total == 1 and tasks[0]["id"] == "t00"
    assert store.list(ALICE, status=COMPLETED, after=_stamp(1))[1] == 1
    assert store.list(ALICE, context_id="none") == ([], 0, None)
    tasks, total, cursor = store.list(ALICE, context_id="odd", limit=10)
    rest, total_rest, _ = store.list(ALICE, context_id="odd", limit=100, cursor=cursor)
    assert total == total_rest == 28 and len(tasks) + len(rest) == 28
    assert all(t["contextId"] == "odd" for t in rest)


def test_the_cursor_stays_valid_whatever_changes_between_pages(store):
    """The cursor is a key, not a position: deleting the page's last task,
    or a task before it, or adding newer ones, neither repeats nor skips a
    task that stayed."""
    expected = _fill(store)
    tasks, _, cursor = store.list(ALICE, limit=10)
    store.delete(cursor[1])
    store.delete(expected[0][1])
    store.commit(task("new", stamp=30), ALICE, 0)
    tasks, total, _ = store.list(ALICE, limit=10, cursor=cursor)
    assert total == 56 and [_key(t) for t in tasks] == expected[10:20]


def test_a_list_page_is_bounded_in_bytes_and_holds_at_least_one_task(make_store):
    """A page stops before ``max_page_bytes`` of task JSON (but always holds
    one task), and its cursor goes on where it stopped."""
    store = make_store(max_page_bytes=500)
    for i in range(5):
        store.commit(task("t%d" % i, stamp=i, pad="x" * 100), ALICE, 0)
    store.commit(task("huge", stamp=9, pad="x" * 1000), ALICE, 0)
    tasks, total, cursor = store.list(ALICE, limit=50)
    assert [t["id"] for t in tasks] == ["huge"] and total == 6
    seen = ["huge"]
    while cursor is not None:
        tasks, _, cursor = store.list(ALICE, limit=50, cursor=cursor)
        assert len(tasks) == 2 or cursor is None
        assert sum(len(a2a_min._dumps(t)) for t in tasks) <= 500
        seen += [t["id"] for t in tasks]
    assert seen == ["huge", "t4", "t3", "t2", "t1", "t0"]


# -- push notification configs ----------------------------------------------------------------

def test_push_configs_are_kept_per_task_in_the_order_first_put(store):
    """put_config inserts, or replaces by id keeping its place; get_config and
    configs read them (None and [] when there are none); delete_config of a
    missing one is no error."""
    store.commit(task("t1"), ALICE, 0)
    store.commit(task("t2"), ALICE, 0)
    assert store.configs("t1") == [] and store.get_config("t1", "a") is None
    for config_id in "bac":
        store.put_config("t1", {"id": config_id, "url": "https://x/" + config_id}, 3)
    store.put_config("t2", {"id": "a", "url": "https://other"}, 3)
    store.put_config("t1", {"id": "b", "url": "https://new"}, 3)       # full, but a replacement
    assert [c["id"] for c in store.configs("t1")] == ["b", "a", "c"]
    assert store.get_config("t1", "b") == {"id": "b", "url": "https://new"}
    assert store.get_config("t2", "a") == {"id": "a", "url": "https://other"}
    with pytest.raises(InvalidParamsError) as caught:
        store.put_config("t1", {"id": "d"}, 3)
    assert caught.value.field == "taskId"
    store.delete_config("t1", "a")
    store.delete_config("t1", "missing")
    store.delete_config("missing", "a")
    assert [c["id"] for c in store.configs("t1")] == ["b", "c"]
    store.put_config("t1", {"id": "d"}, 3)
    assert [c["id"] for c in store.configs("t1")] == ["b", "c", "d"]
    assert store.get_config("t1", "a") is None and store.configs("t2") == [{"id": "a",
                                                                           "url": "https://other"}]


# -- leases --------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
def test_a_running_tasks_commit_takes_its_holders_lease(make_store):
    """(Leases are a shared store's: in memory, this process runs every task.)
    A commit of a running task with a holder leases it for ``lease_ttl``;
    renew(holder) extends that holder's leases only; expired() names the
    running tasks (and owners) whose lease ran out; a task that becomes idle,
    or is deleted, has none. A commit without a holder keeps the lease."""
    # (Times with room for a loaded machine: each step below takes a few
    # commits, which on a busy CI machine may take tens of milliseconds.)
    store = make_store(lease_ttl=2.0)
    store.commit(task("t1"), ALICE, 0, holder="p1")
    store.commit(task("t2"), BOB, 0, holder="p2")
    store.commit(task("t3"), BOB, 0)                         # no holder, no lease
    store.commit(task("t4"), BOB, 0, holder="p2")
    store.commit(task("idle", INPUT_REQUIRED), ALICE, 0, holder="p1")  # idle: no lease
    assert store.expired() == []
    time.sleep(1.4)
    store.renew("p1")
    store.commit(task("t2", stamp=1), BOB, 1)                # no holder: the lease stays
    time.sleep(0.8)                                          # p2's ran out, p1's has 1.2 s
    assert sorted(store.expired()) == [("t2", BOB), ("t4", BOB)]
    store.commit(task("t2", INPUT_REQUIRED), BOB, 2, holder="p2")
    store.delete("t4")
    assert store.expired() == []                             # idle, or gone: no lease
    store.commit(task("t2"), BOB, 3)                         # running again, no holder
    store.commit(task("t1", COMPLETED), ALICE, 1)
    time.sleep(2.1)
    assert store.expired() == []
    store.commit(task("t3", stamp=1), BOB, 1, holder="p3")   # a lease taken later
    store.renew("p3")
    assert store.expired() == []


# -- bounds and eviction ---------------------------------------------------------------------

def test_idle_tasks_expire_task_ttl_after_they_became_idle(make_store):
    """Finished and waiting tasks go ``task_ttl`` after they became idle (at
    the next write), with their events and configs, each told to
    ``on_evict``; running tasks stay however old."""
    store = make_store(task_ttl=0.5)
    gone = _evictions(store)
    done = task("done", COMPLETED)
    store.commit(done, ALICE, 0, {"task": done})
    store.commit(task("waiting", INPUT_REQUIRED), ALICE, 0)
    store.commit(task("running"), ALICE, 0, holder="p1")
    store.put_config("done", {"id": "a"}, 3)
    time.sleep(0.6)
    store.commit(task("new"), ALICE, 0)
    assert sorted(gone) == ["done", "waiting"]
    assert store.get("done", ALICE) is None and store.get("waiting", ALICE) is None
    assert store.get("running", ALICE) is not None
    assert store.events("done") is None and store.configs("done") == []
    assert store.get_config("done", "a") is None
    stats = store.stats()
    assert (stats["tasks"], stats["idle"]) == (2, 0)


def test_a_task_stays_idle_since_it_first_became_idle(make_store):
    """Waiting again (AUTH_REQUIRED after INPUT_REQUIRED) does not restart its
    TTL; running again does."""
    store = make_store(task_ttl=0.3)
    gone = _evictions(store)
    store.commit(task("w", INPUT_REQUIRED), ALICE, 0)
    store.commit(task("r", INPUT_REQUIRED), ALICE, 0)
    time.sleep(0.2)
    store.commit(task("w", "TASK_STATE_AUTH_REQUIRED"), ALICE, 1)
    store.commit(task("r"), ALICE, 1)
    time.sleep(0.2)
    store.commit(task("r", INPUT_REQUIRED), ALICE, 2)        # idle from now: 0.3 s to go
    assert gone == ["w"]
    assert store.get("r", ALICE) is not None


def test_a_full_store_evicts_its_oldest_idle_task_and_refuses_when_all_run(make_store):
    """At ``max_tasks``, a new task evicts the oldest idle one; if every task
    runs, the new one is refused with TaskStoreFullError (not
    CallerLimitError) naming max_tasks, and nothing is lost."""
    store = make_store(max_tasks=4)
    gone = _evictions(store)
    for i in range(4):
        store.commit(task("r%d" % i), ALICE if i % 2 else BOB, 0)
    with pytest.raises(TaskStoreFullError) as caught:
        store.commit(task("r4"), ALICE, 0)
    assert not isinstance(caught.value, CallerLimitError)
    assert caught.value.metadata == {"limit": "max_tasks"}
    assert gone == [] and store.stats()["tasks"] == 4 and store.get("r4", ALICE) is None
    store.commit(task("r0", COMPLETED), BOB, 1)
    store.commit(task("r1", COMPLETED), ALICE, 1)
    store.commit(task("r4"), ALICE, 0)                       # r0, the oldest idle, goes
    assert gone == ["r0"] and store.get("r1", ALICE) is not None
    assert store.stats()["tasks"] == 4
    store.commit(task("r2", stamp=1), BOB, 1)                # an update of a task is not new
    assert gone == ["r0"]


def test_a_full_store_makes_room_for_a_while_not_for_one_task(make_store):
    """A full store evicts, oldest idle first, down to a 64th below the bound
    (200 tasks: 197), so the writes that follow find room."""
    store = make_store(max_tasks=200)
    gone = _evictions(store)
    for i in range(200):
        store.commit(task("t%03d" % i, COMPLETED), ALICE, 0)
    store.commit(task("new"), ALICE, 0)
    assert gone == ["t%03d" % i for i in range(4)] and store.stats()["tasks"] == 197
    store.max_tasks = 10
    store.commit(task("newer"), ALICE, 0)
    assert gone == ["t%03d" % i for i in range(192)] and store.stats()["tasks"] == 10
    assert store.get("t199", ALICE) is not None and store.get("new", ALICE) is not None


def test_the_store_is_bounded_in_bytes_evicting_the_oldest_idle_first(make_store):
    """Past ``max_bytes`` the oldest idle tasks go, in order, as many as it
    takes (however each backend counts a task's bytes), and the store's bytes
    stay within the bound; a task that cannot fit beside the running ones is
    refused naming max_store_bytes."""
    store = make_store(max_bytes=10_000)
    gone = _evictions(store)
    for i in range(10):
        store.commit(task("t%d" % i, COMPLETED, pad="x" * 2000), ALICE, 0)
        assert store.stats()["bytes"] <= 10_000
    assert 3 <= store.stats()["tasks"] <= 4
    assert gone == ["t%d" % i for i in range(len(gone))]
    assert store.get("t9", ALICE) is not None
    for i in range(3):
        store.commit(task("run%d" % i, pad="x" * 600), ALICE, 0)   # (memory: and its live copy)
    with pytest.raises(TaskStoreFullError) as caught:
        store.commit(task("huge", pad="x" * 8000), ALICE, 0)
    assert caught.value.metadata == {"limit": "max_store_bytes"}
    assert all(store.get("run%d" % i, ALICE) is not None for i in range(3))
    assert store.stats()["bytes"] <= 10_000


def test_tasks_evicted_for_a_refused_task_are_told_and_stay_evicted(make_store, backend,
                                                                    request):
    """When a write evicts idle tasks and is refused all the same, what it
    evicted stays evicted, and on_evict hears of each."""
    store = make_store(max_bytes=6000)
    gone = _evictions(store)
    store.commit(task("idle", COMPLETED, pad="x" * 2000), ALICE, 0)
    store.commit(task("run", pad="x" * 2000), ALICE, 0)
    with pytest.raises(TaskStoreFullError):
        store.commit(task("huge", pad="x" * 5000), ALICE, 0)
    assert store.get("idle", ALICE) is None
    assert gone == ["idle"]


def test_a_new_task_whose_id_is_taken_evicts_nothing_at_a_full_share(make_store):
    """A new task whose id is taken is refused (ConflictError) before anything
    is evicted for it, however full its caller's share: on every backend, as
    in memory."""
    store = make_store(max_tasks_per_caller=4)
    gone = _evictions(store)
    for i in range(4):
        store.commit(task("t%d" % i, COMPLETED, stamp=i), ALICE, 0)
    with pytest.raises(ConflictError):
        store.commit(task("t3", COMPLETED), ALICE, 0)
    assert gone == [] and store.stats()["tasks"] == 4
    store.commit(task("t4", COMPLETED), ALICE, 0)            # a new id: the oldest goes
    assert store.get("t0", ALICE) is None and gone == ["t0"]


def test_a_caller_holds_at_most_its_share_of_tasks(make_store):
    """Past ``max_tasks_per_caller`` a caller's own oldest idle task goes; if
    all of its tasks run, its new one is refused with CallerLimitError naming
    the limit, while other callers are served. A task counts against the
    caller that created it (the owner, unless ``caller`` is given)."""
    store = make_store(max_tasks_per_caller=3)
    gone = _evictions(store)
    for i in range(3):
        store.commit(task("a%d" % i), ALICE, 0)
    with pytest.raises(CallerLimitError) as caught:
        store.commit(task("a3"), ALICE, 0)
    assert caught.value.metadata == {"limit": "max_tasks_per_caller", "value": 3}
    store.commit(task("b0", COMPLETED), BOB, 0)              # another caller: served
    for i in range(3):                                       # BOB's, counted against a peer
        store.commit(task("p%d" % i, INPUT_REQUIRED), BOB, 0, caller=("peer", "1.2.3.4"))
    store.commit(task("p0"), BOB, 1, caller=BOB)             # running again; the peer's still
    store.commit(task("a1", COMPLETED), ALICE, 1)
    store.commit(task("a3"), ALICE, 0)                       # ALICE's own idle task goes
    assert gone == ["a1"]
    store.commit(task("p3"), BOB, 0, caller=("peer", "1.2.3.4"))
    assert gone == ["a1", "p1"] and store.get("b0", BOB) is not None
    assert store.stats()["callers"] == 3


def test_a_caller_holds_at_most_its_share_of_bytes(make_store):
    """Past ``max_bytes_per_caller``, new tasks and growing ones alike are
    refused with CallerLimitError naming max_bytes_per_caller. (The share is
    set from what one running task weighs in this backend: in memory a
    running task counts its live copy too.)"""
    probe = make_store()
    probe.commit(task("a0", pad="x" * 1600), ALICE, 0)
    share = int(probe.stats()["bytes"] * 1.8)
    store = make_store(max_bytes_per_caller=share)
    store.commit(task("a0", pad="x" * 1600), ALICE, 0)
    with pytest.raises(CallerLimitError) as caught:
        store.commit(task("a1", pad="x" * 1600), ALICE, 0)
    assert caught.value.metadata == {"limit": "max_bytes_per_caller", "value": share}
    with pytest.raises(CallerLimitError):
        store.commit(task("a0", pad="x" * 4000), ALICE, 1)
    store.commit(task("b0", pad="x" * 1600), BOB, 0)
    store.commit(task("a0", COMPLETED, pad="x" * 1600), ALICE, 1)
    store.commit(task("a1", pad="x" * 2400), ALICE, 0)       # the idle one made room
    assert store.get("a0", ALICE) is None and store.get("b0", BOB) is not None


def test_a_refused_caller_is_not_counted(make_store, backend, request):
    """A caller whose first task is refused holds nothing: stats() does not
    count it (nor does the store keep it: callers that keep being refused
    must not grow the store)."""
    store = make_store(max_tasks=1)
    store.commit(task("r"), ALICE, 0)
    for i in range(3):
        with pytest.raises(TaskStoreFullError):
            store.commit(task("n%d" % i), ("", "caller%d" % i), 0)
    assert store.stats()["callers"] == 1


def test_on_evict_is_called_outside_the_stores_lock(make_store):
    """on_evict may use the store (here, stats() and delete()): it is called
    once the write is done, not within it."""
    store = make_store(task_ttl=0.5)
    seen = []

    def evicted(task_id):
        seen.append((task_id, store.stats()["tasks"]))
        store.delete("other")
    store.on_evict = evicted
    store.commit(task("old", COMPLETED), ALICE, 0)
    store.commit(task("other"), ALICE, 0)
    time.sleep(0.6)
    done = threading.Event()
    threading.Thread(target=lambda: (store.commit(task("new"), ALICE, 0), done.set()),
                     daemon=True).start()
    assert done.wait(10), "on_evict was called with the store locked"
    assert seen == [("old", 2)] and store.get("other", ALICE) is None


# -- delete, stats, changed ---------------------------------------------------------------------

def test_delete_forgets_the_task_its_events_configs_and_lease(make_store):
    """After delete(), the task, its events, configs and lease are gone, as
    is what it counted for; deleting an unknown id is no error; the id may
    be used again from scratch (version 1, seq 0)."""
    store = make_store(**({} if make_store.memory else {"lease_ttl": 0.05}))
    store.commit(task("t1"), ALICE, 0, {"statusUpdate": {}}, holder="p1")
    store.put_config("t1", {"id": "a"}, 3)
    store.delete("t1")
    store.delete("t1")
    store.delete("never")
    assert store.get("t1", ALICE) is None and store.events("t1") is None
    assert store.configs("t1") == [] and store.get_config("t1", "a") is None
    time.sleep(0.1)
    assert not store.shared or store.expired() == []
    stats = store.stats()
    assert (stats["tasks"], stats["bytes"], stats["idle"], stats["callers"]) == (0, 0, 0, 0)
    assert store.list(ALICE) == ([], 0, None)
    _, version, seq = store.commit(task("t1"), ALICE, 0, {"statusUpdate": {"again": 1}})
    assert (version, seq) == (1, 0) and store.configs("t1") == []
    assert store.events("t1") == (0, [(0, {"statusUpdate": {"again": 1}})])


def test_stats_count_tasks_bytes_idle_tasks_and_callers(make_store):
    store = make_store(max_tasks=50, max_bytes=1 << 20)
    outages = {"outages": 0, "refused_while_down": 0, "down": False} if store.shared else {}
    assert store.stats() == {"tasks": 0, "bytes": 0, "idle": 0, "callers": 0,
                             "max_tasks": 50, "max_bytes": 1 << 20, **outages}
    store.commit(task("t1"), ALICE, 0)
    store.commit(task("t2", COMPLETED), BOB, 0)
    store.commit(task("t3", INPUT_REQUIRED), BOB, 0, caller=("peer", "x"))
    stats = store.stats()
    assert (stats["tasks"], stats["idle"], stats["callers"]) == (3, 2, 3)
    small = stats["bytes"]
    assert small > 0
    store.commit(task("t1", pad="x" * 1000), ALICE, 1, {"statusUpdate": {}})
    assert store.stats()["bytes"] > small + 1000
    store.delete("t2")
    stats = store.stats()
    assert (stats["tasks"], stats["idle"], stats["callers"]) == (2, 1, 2)
    store.commit(task("t3"), BOB, 1)                         # running again
    assert store.stats()["idle"] == 0


def test_changed_is_a_number_that_moves_when_another_process_writes(store, backend):
    """changed() is a hint: a number that moves whenever another process may
    have written (the memory store: never; SQLite: when any other connection
    committed, this process's included: see the SQLite part)."""
    before = store.changed()
    assert isinstance(before, int)
    store.commit(task("t1"), ALICE, 0, {"statusUpdate": {}})
    store.put_config("t1", {"id": "a"}, 3)
    store.delete("t1")
    # (PostgreSQL's notifications arrive when its listener hears them, a moment
    # later; the number then moves, at the latest with its poll term.)
    deadline = time.monotonic() + 10
    while backend == "postgres" and store.changed() == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert (store.changed() == before) == (backend == "memory")


# -- idempotent sends: claim_send, settle_send -----------------------------------------------

REPLY = {"messageId": "r1", "role": "ROLE_AGENT", "parts": [{"text": "d\u00e9j\u00e0 vu"}]}


def _same_storage(store, backend):
    """Another store object on ``store``'s file or schema, as another process
    opens it (the memory store: itself)."""
    if backend == "sqlite":
        return a2a_store.SQLiteStore(store.path)
    if backend == "postgres":
        import a2a_postgres
        return a2a_postgres.PostgresStore(postgres_server().url, schema=store.schema)
    return store


def _first(answer):
    """A repeat's answer, the first's [task id, reply, digest] (a store may
    give more after them: the memory store's record gives its time too)."""
    return list(answer)[:3]


def _sends(store, backend):
    """How many send records the store keeps."""
    if backend == "sqlite":
        return sql(store, "SELECT count(*) FROM sends")[0][0]
    if backend == "postgres":
        return store._read("SELECT count(*) FROM a2a_sends")[0][0]
    return len(store._sends)


def test_a_send_is_claimed_once_and_a_repeat_gets_the_first(store):
    """The first claim of a key is None (recorded); a repeat, whatever its
    task id, gets the first's [task id, reply, digest]: no reply until
    settle_send gives one, then that Message and its message's digest."""
    assert store.claim_send(ALICE, "m1", "t1", 60) is None
    assert _first(store.claim_send(ALICE, "m1", "t2", 60)) == ["t1", None, None]
    assert _first(store.claim_send(ALICE, "m1", "t3", 60)) == ["t1", None, None]
    store.settle_send(ALICE, "m1", REPLY, "d1")
    assert _first(store.claim_send(ALICE, "m1", "t4", 60)) == ["t1", REPLY, "d1"]
    odd = "m\x00\\\u00e9"                   # (a NUL, a backslash: PostgreSQL's text)
    assert store.claim_send(ALICE, odd, "t\x005", 60) is None
    assert _first(store.claim_send(ALICE, odd, "t6", 60)) == ["t\x005", None, None]
    assert store.claim_send(ALICE, "m\x00", "t7", 60) is None


def test_a_refused_send_frees_its_key(store):
    """settle_send(None): the first was refused, and the key is free: the
    next claim is first. Settling a key nobody claimed records nothing."""
    assert store.claim_send(ALICE, "m1", "t1", 60) is None
    store.settle_send(ALICE, "m1", None)
    assert store.claim_send(ALICE, "m1", "t2", 60) is None
    assert _first(store.claim_send(ALICE, "m1", "t3", 60)) == ["t2", None, None]
    store.settle_send(ALICE, "nobody's", REPLY, "d")
    store.settle_send(ALICE, "nobody's either", None)
    assert store.claim_send(ALICE, "nobody's", "t4", 60) is None
    assert _first(store.claim_send(ALICE, "nobody's", "t", 60)) == ["t4", None, None]


def test_send_keys_are_each_owners_own(store):
    """The same key from another principal, another tenant, or nobody
    signed in, is another send."""
    assert store.claim_send(ALICE, "m1", "t1", 60) is None
    for other in (BOB, ("travel", "alice"), ("", None)):
        assert store.claim_send(other, "m1", "t2", 60) is None
    store.settle_send(BOB, "m1", REPLY, "d2")
    assert _first(store.claim_send(ALICE, "m1", "t", 60)) == ["t1", None, None]
    assert _first(store.claim_send(BOB, "m1", "t", 60)) == ["t2", REPLY, "d2"]
    store.settle_send(("", None), "m1", None)
    assert _first(store.claim_send(BOB, "m1", "t", 60)) == ["t2", REPLY, "d2"]


def test_a_send_is_remembered_for_its_window_only(store, backend):
    """A record older than ``window`` is dead: the key's next claim is
    first, whether its first had a reply, a task, or neither. Each claim
    removes dead records besides its own (a shared store the oldest 64)."""
    assert store.claim_send(ALICE, "m1", "t1", 1.0) is None
    store.settle_send(ALICE, "m1", REPLY, "d1")
    assert store.claim_send(ALICE, "m2", "t2", 1.0) is None
    store.commit(task("t2"), ALICE, 0)
    for i in range(98):
        store.claim_send(ALICE, f"k{i}", f"t{i}", 1.0)
    assert _first(store.claim_send(ALICE, "m1", "t", 1.0)) == ["t1", REPLY, "d1"]
    assert _sends(store, backend) == 100
    time.sleep(1.2)
    assert store.claim_send(ALICE, "m1", "t3", 1.0) is None
    assert _sends(store, backend) in ((1,) if backend == "memory" else (100 - 64, 100 - 64 + 1))
    assert store.claim_send(ALICE, "m2", "t4", 1.0) is None
    assert _sends(store, backend) <= 2
    assert _first(store.claim_send(ALICE, "m1", "t", 1.0)) == ["t3", None, None]
    assert _first(store.claim_send(ALICE, "m2", "t", 1.0)) == ["t4", None, None]


def test_a_first_send_without_reply_or_task_stays_first_for_its_window(store):
    """A first that made neither a reply nor a task yet may still be running
    (an agent silent for minutes): it is never taken over, however old,
    until its window ends (a repeat must never run the agent again)."""
    assert store.claim_send(ALICE, "m1", "t1", 2.0) is None
    time.sleep(1.2)
    assert _first(store.claim_send(ALICE, "m1", "tx", 2.0)) == ["t1", None, None]
    assert _first(store.claim_send(ALICE, "m1", "tx", 2.0)) == ["t1", None, None]


def test_of_sends_claiming_one_key_at_once_exactly_one_is_first(store, backend):
    """12 threads claim one key at the same moment through two store objects
    on one file or database (as two processes do): exactly one is first,
    and every other gets its task id. The same when the key's record is
    dead (its window passed): exactly one takes it over."""
    stores = [store, _same_storage(store, backend)]
    try:
        for key, before, window in (("fresh", None, 60), ("dead", 1.2, 1.0)):
            if before:
                assert store.claim_send(ALICE, key, "t-old", window) is None
                time.sleep(before)
            barrier, got = threading.Barrier(12), {}

            def claim(i):
                barrier.wait()
                got[i] = stores[i % 2].claim_send(ALICE, key, f"t{i}", window)
            threads = [threading.Thread(target=claim, args=(i,)) for i in range(12)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            firsts = [i for i, first in got.items() if first is None]
            assert len(got) == 12 and len(firsts) == 1, (key, got)
            first = firsts[0]
            assert all(_first(answer) == [f"t{first}", None, None]
                       for i, answer in got.items() if i != first), (key, got)
    finally:
        if backend == "postgres":
            stores[1].close()


# -- what is kept costs what it is counted for ---------------------------------------------

# A server in a process of its own (so that nothing of the test's process is
# measured): ``count`` messages, each with 750 KB of JSON metadata that parses
# to 250,000 dicts (18 MB), to the demo agent, which asks for input: each task
# waits, with its events kept for Last-Event-ID. Prints what the process grew
# by (its resident memory, after gc.collect(): tracemalloc would trace each of
# the 250,000 allocations of a message, 10 times slower) and the store's stats.
_WAITING_TASKS = r"""
import gc, json, os, sys
import a2a_min, a2a_store
backend, where, count, limits = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
if backend == "memory":
    store = None
elif backend == "sqlite":
    store = a2a_store.SQLiteStore(where, **limits)
else:
    import a2a_postgres
    url, schema = where.split(" ")
    store = a2a_postgres.PostgresStore(url, schema=schema, **limits)
server = a2a_min.demo_server(store=store, max_body_bytes=2 << 20, **{
    {"max_bytes": "max_store_bytes"}.get(k, k): v for k, v in limits.items()})
headers = {"content-type": "application/json", "a2a-version": "1.0"}

def send(i):
    body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {
        "message": {"messageId": "m%d" % i, "role": "ROLE_USER", "parts": [{"text": "wait"}],
                    "metadata": {"k": [{}] * 250000}}}}).encode()
    got = json.loads(server.handle_http("POST", "/", "", headers, body).body)
    assert got["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", got

def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

send(-1)                                # (what the first request imports and caches)
gc.collect()
before = resident()
for i in range(count):
    send(i)
gc.collect()
grown = resident() - before
print(json.dumps({"grown": grown, **server.store.stats()}))
"""


def _waiting_tasks(backend, tmp_path, count, **limits):
    """Run _WAITING_TASKS on a new store of ``backend``: (MiB grown, stats)."""
    import subprocess
    import sys
    need("/proc/self/statm", "measuring a process's resident memory needs Linux's /proc")
    if backend == "sqlite":
        where = str(tmp_path / "waiting.db")
    elif backend == "postgres":
        made = postgres_store()                      # (a schema of its own, made empty)
        where = postgres_server().url + " " + made.schema
        made.close()
    else:
        where = ""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", _WAITING_TASKS, backend, where, str(count),
                           json.dumps(limits)], capture_output=True, text=True, timeout=120,
                          cwd=here, env={**os.environ, "PYTHONPATH": here})
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout.splitlines()[-1])
    return stats["grown"] / 2**20, stats


def test_waiting_tasks_with_large_messages_cost_about_what_they_are_counted_for(backend,
                                                                               tmp_path):
    """20 waiting tasks, each made by a message of 750 KB of JSON (18 MB once
    parsed), grow the server by less than 60 MiB, all 20 kept: a task's events
    are kept for Last-Event-ID as their JSON, not as the parsed events (which
    took 352 MiB in memory)."""
    grown, stats = _waiting_tasks(backend, tmp_path, 20, max_bytes_per_caller=128 << 20)
    assert stats["tasks"] == 21
    assert grown < 60, f"{grown:.0f} MiB for 20 waiting tasks"


def test_the_byte_budget_bounds_what_kept_events_really_take(backend, tmp_path):
    """A store at its byte budget evicts its oldest idle tasks, events and
    all: 30 such tasks in a budget of 32 MiB leave the process grown by less
    than the budget (what it counts is what it keeps), not by the parsed
    events of the tasks it kept (20 x 18 MB). (In memory, the running task's
    live copy, 17 MB, counts too while its turn runs.)"""
    budget = 32 << 20
    grown, stats = _waiting_tasks(backend, tmp_path, 30, max_bytes=budget,
                                  max_bytes_per_caller=budget)
    assert stats["bytes"] <= budget and stats["tasks"] < 30
    assert grown < 36, f"{grown:.0f} MiB in a budget of 32 MiB"


def test_push_configs_are_within_the_byte_budget(make_store):
    """A push config past a bound is a write like a commit: idle tasks are
    evicted to make room (the config's own task never), else it is refused
    naming the bound; the store's bytes never pass max_bytes."""
    store = make_store(max_bytes=40_000)
    gone = _evictions(store)
    for i in range(4):
        store.commit(task("idle%d" % i, INPUT_REQUIRED, pad="x" * 5000), ALICE, 0)
    store.commit(task("t1"), ALICE, 0)                      # running: never evicted
    for i in range(10):
        store.put_config("t1", {"id": "c%d" % i, "url": "http://x/" + "p" * 2500}, 10)
        assert store.stats()["bytes"] <= 40_000
    assert gone and gone == ["idle%d" % i for i in range(len(gone))]
    assert len(store.configs("t1")) == 10
    with pytest.raises(TaskStoreFullError) as caught:       # (a config replaced, larger)
        store.put_config("t1", {"id": "c0", "url": "http://x/" + "p" * 30_000}, 10)
    assert caught.value.metadata == {"limit": "max_store_bytes"}
    assert len(store.get_config("t1", "c0")["url"]) < 3000
    assert store.stats()["bytes"] <= 40_000


def test_push_configs_are_within_a_callers_share(make_store):
    """... and within the caller's share: its own idle tasks go first, then
    the config is refused with CallerLimitError."""
    store = make_store(max_bytes_per_caller=20_000)
    store.commit(task("old", INPUT_REQUIRED, pad="x" * 8000), ALICE, 0)
    store.commit(task("bobs", INPUT_REQUIRED, pad="x" * 8000), BOB, 0)
    store.commit(task("t1", INPUT_REQUIRED), ALICE, 0)
    store.put_config("t1", {"id": "a", "url": "http://x/" + "p" * 14_000}, 10)
    assert store.get("old", ALICE) is None and store.get("bobs", BOB) is not None
    with pytest.raises(CallerLimitError):
        store.put_config("t1", {"id": "b", "url": "http://x/" + "p" * 14_000}, 10)
    assert [c["id"] for c in store.configs("t1")] == ["a"]


def test_memory_a_running_tasks_live_copy_counts_in_its_size():
    """In memory, a running task is counted for its live copy too (the
    parsed task its channel holds): about what its JSON decodes to, which may
    be 25 times the JSON. Once the task waits or ends, only its JSON counts."""
    store = _MEMORY(max_bytes=3_000_000)
    dense = [{}] * 20_000                                    # 60 KB of JSON, 1.4 MB parsed
    store.commit(task("t1", metadata={"k": dense}), ALICE, 0)
    assert store.stats()["bytes"] > 1_000_000
    with pytest.raises(TaskStoreFullError):                  # two do not fit running
        store.commit(task("t2", metadata={"k": dense}), ALICE, 0)
    store.commit(task("t1", INPUT_REQUIRED, metadata={"k": dense}), ALICE, 1)
    assert store.stats()["bytes"] < 100_000
    store.commit(task("t2", metadata={"k": dense}), ALICE, 0)


def test_events_are_replayed_as_the_json_they_were_kept_as(store):
    """What events() gives is what was committed, and carries the JSON it is
    kept as (the bytes a stream splices into its frames), also once the task
    waits and only the JSON is kept."""
    version = 0
    for i in range(3):
        _, version, _ = store.commit(task("t1"), ALICE, version, {"statusUpdate": {"n": i}})
    _, version, _ = store.commit(task("t1", INPUT_REQUIRED), ALICE, version,
                                 {"statusUpdate": {"n": 3}})
    _, kept = store.events("t1")
    assert kept == [(i, {"statusUpdate": {"n": i}}) for i in range(4)]
    assert [e.json for _, e in kept] == [b'{"statusUpdate":{"n":%d}}' % i for i in range(4)]


def test_the_cache_of_read_tasks_keeps_no_task_that_decodes_large(backend, make_store):
    """A task read again is served decoded from a cache if it is small; 4 KB
    of JSON that decodes to 90 KB (a list of empty objects) is not kept."""
    if backend == "postgres":
        pytest.skip("the PostgreSQL store keeps no cache of decoded tasks")
    store = make_store()
    store.commit(task("plain", INPUT_REQUIRED, pad="x" * 3000), ALICE, 0)
    store.commit(task("dense", INPUT_REQUIRED, metadata={"k": [{}] * 1300}), ALICE, 0)
    assert store.get("plain", ALICE) is store.get("plain", ALICE)
    assert store.get("dense", ALICE) is not store.get("dense", ALICE)


# =============================================================================
# Part 2: SQLite only: the file, its versions, other connections and processes
# =============================================================================

@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "tasks.db")


@pytest.fixture
def sqlite_store(path):
    return a2a_store.SQLiteStore(path)


def test_sqlite_a_new_file_and_its_wal_are_readable_by_their_owner_only(tmp_path):
    """The file, -wal and -shm are 0600 whatever the umask; the file is in WAL
    mode, synchronous NORMAL, or FULL when ``durable``."""
    old = os.umask(0)
    try:
        store = a2a_store.SQLiteStore(str(tmp_path / "a.db"))
        store.commit(task("t1"), ALICE, 0)
    finally:
        os.umask(old)
    for name in ("a.db", "a.db-wal", "a.db-shm"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600, name
    assert sql(store, "PRAGMA journal_mode") == [("wal",)]
    assert sql(store, "PRAGMA synchronous") == [(1,)]                            # NORMAL
    durable = a2a_store.SQLiteStore(str(tmp_path / "a.db"), durable=True)
    assert sql(durable, "PRAGMA synchronous") == [(2,)]                          # FULL


def test_sqlite_urls_and_open_store(tmp_path, monkeypatch):
    """sqlite:PATH names the path as it is, sqlite:///PATH SQLAlchemy's way;
    a host, an in-memory database or a file: URI is refused; open_store
    gives None for no location and refuses schemes it has no store for
    (postgresql:// is a2a_postgres's: see test_postgres.py)."""
    monkeypatch.chdir(tmp_path)
    assert a2a_store.SQLiteStore("sqlite:rel.db").path == "rel.db"
    assert a2a_store.SQLiteStore("sqlite:///rel3.db").path == "rel3.db"
    absolute = str(tmp_path / "abs.db")
    assert a2a_store.SQLiteStore("sqlite:" + absolute).path == absolute
    assert a2a_store.SQLiteStore("sqlite:///" + absolute).path == absolute   # sqlite:////tmp/...
    assert os.path.exists(tmp_path / "rel.db") and os.path.exists(tmp_path / "rel3.db")
    for bad in ("sqlite://host/x.db", "sqlite::memory:", ":memory:", "", "file:x.db"):
        with pytest.raises(ValueError):
            a2a_store.SQLiteStore(bad)
    assert a2a_store.open_store(None) is None and a2a_store.open_store("") is None
    assert isinstance(a2a_store.open_store("sqlite:o.db", max_tasks=7), a2a_store.SQLiteStore)
    assert a2a_store.open_store("o2.db", max_tasks=7).max_tasks == 7
    with pytest.raises(ValueError):
        a2a_store.open_store("redis://127.0.0.1/0")


def test_sqlite_tasks_outlive_the_store_that_wrote_them(path):
    """A store opened again on the file (a restart) finds the tasks, their
    versions, events, configs and leases, and goes on numbering."""
    store = a2a_store.SQLiteStore(path, lease_ttl=0.05)
    store.commit(task("t1"), ALICE, 0, {"statusUpdate": {"n": 0}}, holder="p1")
    store.put_config("t1", {"id": "a"}, 3)
    del store
    time.sleep(0.1)
    again = a2a_store.SQLiteStore(path)
    got = again.get("t1", ALICE)
    assert got == task("t1") and (got.version, got.next_seq) == (1, 1)
    assert again.events("t1") == (0, [(0, {"statusUpdate": {"n": 0}})])
    assert again.configs("t1") == [{"id": "a"}] and again.expired() == [("t1", ALICE)]
    assert again.commit(task("t1"), ALICE, 1, {"statusUpdate": {}})[1:] == (2, 1)


def test_sqlite_the_schema_version_is_recorded_and_a_newer_one_refused(path):
    """A new file records SQLITE_SCHEMA_VERSION; a file of a newer version is
    refused with a message naming both versions."""
    a2a_store.SQLiteStore(path)
    version = a2a_store.SQLITE_SCHEMA_VERSION
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
        str(version),)
    a2a_store.SQLiteStore(path)                            # opened again: nothing to do
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version + 1),))
    db.commit()
    db.close()
    with pytest.raises(RuntimeError) as caught:
        a2a_store.SQLiteStore(path)
    assert f"schema version {version + 1}" in str(caught.value)
    assert f"version {version} of this a2a_min" in str(caught.value)


def test_sqlite_an_older_file_is_brought_forward_step_by_step(path, monkeypatch):
    """Each migration step turns version i into i + 1: a version 1 file
    opened by a version 2 store gets the step, keeps its tasks and records 2."""
    a2a_store.SQLiteStore(path).commit(task("t1"), ALICE, 0)
    step = ("ALTER TABLE tasks ADD COLUMN extra TEXT",)
    monkeypatch.setattr(a2a_store, "_SQLITE_MIGRATIONS", a2a_store._SQLITE_MIGRATIONS + (step,))
    monkeypatch.setattr(a2a_store, "SQLITE_SCHEMA_VERSION", len(a2a_store._SQLITE_MIGRATIONS))
    store = a2a_store.SQLiteStore(path)
    assert store.get("t1", ALICE) is not None
    assert sql(store, "SELECT value FROM meta") == [(str(a2a_store.SQLITE_SCHEMA_VERSION),)]
    assert "extra" in [r[1] for r in sql(store, "PRAGMA table_info(tasks)")]


def test_sqlite_a_damaged_file_is_refused_saying_what_to_do(path):
    with open(path, "wb") as f:
        f.write(b"this is not a database, just some text " * 200)
    with pytest.raises(RuntimeError) as caught:
        a2a_store.SQLiteStore(path)
    assert "not an SQLite database" in str(caught.value) and "backup" in str(caught.value)


def _check_read_only(store):
    """A read-only store serves reads; each write is an InternalError naming
    the file (not its path) and the problem."""
    assert store.read_only
    assert store.get("t1", ALICE)["id"] == "t1"
    assert store.list(ALICE)[1] == 1 and store.events("t1") == (0, [(0, {"task": {}})])
    with pytest.raises(InternalError) as caught:
        store.commit(task("t2"), ALICE, 0)
    assert "read-only" in caught.value.message and "tasks.db" in caught.value.message
    assert os.path.dirname(store.path) not in caught.value.message
    with pytest.raises(InternalError):
        store.put_config("t1", {"id": "a"}, 3)


def test_sqlite_a_read_only_file_serves_reads(path):
    a2a_store.SQLiteStore(path).commit(task("t1"), ALICE, 0, {"task": {}})
    os.chmod(path, 0o400)
    try:
        if os.access(path, os.W_OK):
            pytest.skip("running as root: chmod 0400 does not stop root writing (the next test "
                        "covers the read-only path)")
        _check_read_only(a2a_store.SQLiteStore(path))
    finally:
        os.chmod(path, 0o600)


def test_sqlite_a_file_opened_read_only_serves_reads(path, monkeypatch):
    """The read-only path, as root too: a store that finds the file not
    writable opens it with mode=ro, where SQLite refuses every write."""
    a2a_store.SQLiteStore(path).commit(task("t1"), ALICE, 0, {"task": {}})
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    _check_read_only(a2a_store.SQLiteStore(path))


def test_sqlite_a_full_disk_is_server_busy_and_rolls_back(sqlite_store):
    """A full disk is an outage (see test_store_outage.py): SERVER_BUSY,
    with Retry-After, saying what is wrong; nothing half-written."""
    store = sqlite_store
    store.commit(task("t1"), ALICE, 0)
    db = store._writing().db                  # the connection commits write on
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")  # as if the disk had no more room
    with pytest.raises(a2a_min.ServerBusyError) as caught:
        for i in range(100):
            store.commit(task("t%d" % (i + 2), pad="x" * 3000), ALICE, 0)
    assert "full disk" in caught.value.message and caught.value.retry_after >= 1
    assert not db.in_transaction and store.get("t1", ALICE) is not None


def test_sqlite_a_write_lock_held_too_long_is_server_busy(path):
    """A writer waits ``busy_timeout`` for another's write lock, then gets
    ServerBusyError; readers never wait (WAL)."""
    store = a2a_store.SQLiteStore(path, busy_timeout=0.1)
    store.commit(task("t1"), ALICE, 0)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(ServerBusyError):
            store.commit(task("t1"), ALICE, 1)
        assert time.monotonic() - started >= 0.09
        assert store.get("t1", ALICE).version == 1
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_sqlite_writers_queued_behind_a_held_lock_each_wait_busy_timeout_in_all(path):
    """Writes of several threads queued behind another process's write lock:
    each gets ServerBusyError once it has waited ``busy_timeout`` since it
    came, however many waited before it in this process (each of them
    waited the whole timeout in turn: k writers, k times busy_timeout)."""
    store = a2a_store.SQLiteStore(path, busy_timeout=0.5)
    store.commit(task("t1"), ALICE, 0)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    waited = []

    def write(i):
        started = time.monotonic()
        try:
            if i % 2:
                store.delete(f"gone{i}")            # (a write of its own transaction)
            else:
                store.commit(task(f"n{i}"), ALICE, 0)
        except ServerBusyError:
            waited.append(time.monotonic() - started)
    threads = [threading.Thread(target=write, args=(i,)) for i in range(6)]
    try:
        for thread in threads:
            thread.start()
            time.sleep(0.05)
        for thread in threads:
            thread.join(30)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert len(waited) == 6 and max(waited) < 1.25, waited    # (it was up to 2.5 s and more)
    store.commit(task("n9"), ALICE, 0)                       # and then it writes again


def test_sqlite_a_task_is_counted_for_its_json_and_its_kept_events(path):
    """SQLite's bytes are those on disk: the task's JSON and its kept events'."""
    store = a2a_store.SQLiteStore(path, replay_buffer=100, replay_buffer_bytes=300)
    version = 0
    for i in range(10):
        _, version, _ = store.commit(task("t1"), ALICE, version,
                                     {"statusUpdate": {"pad": "x" * 80, "n": i}})
    oldest, kept = store.events("t1")
    assert oldest == 8 and sum(len(a2a_min._dumps(e)) for _, e in kept) <= 300
    row = sql(store, "SELECT size, event_bytes, length(body) FROM tasks")[0]
    assert store.stats()["bytes"] == row[0] == row[1] + row[2]
    assert row[1] == sum(len(a2a_min._dumps(e)) for _, e in kept)


def test_sqlite_commits_of_threads_at_once_are_one_transaction_each_with_its_outcome(path):
    """Threads committing while another writes wait, and the next leader
    commits all of them in one transaction (group commit). Each still gets
    its own outcome: new tasks (in one statement, or the general way with an
    event), an update over the right version, and the refused ones (a stale
    version, an id that exists) refused without undoing the others."""
    store = a2a_store.SQLiteStore(path, commit_delay=0)
    store.commit(task("x"), ALICE, 0)
    groups = []
    run_group = store._run_group
    store._run_group = lambda group, batch, **kw: (groups.append(len(batch)),
                                                   run_group(group, batch, **kw))
    outcomes = {}

    def commit(name, *args, **kwargs):
        try:
            outcomes[name] = store.commit(*args, **kwargs)[1:]
        except Exception as error:             # what the test looks at
            outcomes[name] = error

    works = [("first", task("f", COMPLETED), ALICE, 0),
             ("a", task("a", COMPLETED), ALICE, 0), ("b", task("b", COMPLETED), BOB, 0),
             ("stale", task("x"), ALICE, 0), ("update", task("x", COMPLETED), ALICE, 1),
             ("event", task("c"), ALICE, 0, {"statusUpdate": {}}),
             ("again", task("a", COMPLETED), ALICE, 0)]
    group = store._writing()
    threads = [threading.Thread(target=commit, args=work) for work in works]
    with group.turn:                        # as if another thread of this process wrote
        threads[0].start()
        while not group.leading or group.waiting:
            time.sleep(0.001)               # the first took its group and waits to write
        for thread in threads[1:]:
            thread.start()
        while len(group.waiting) < len(works) - 1:
            time.sleep(0.001)
    for thread in threads:
        thread.join(10)
    assert groups == [1, len(works) - 1]
    assert outcomes["first"] == outcomes["b"] == (1, None)
    assert outcomes["update"] == (2, None) and outcomes["event"] == (1, 0)
    assert isinstance(outcomes["stale"], ConflictError)
    twins = [outcomes["a"], outcomes["again"]]        # one id twice: whichever came first
    assert (1, None) in twins and sum(isinstance(o, ConflictError) for o in twins) == 1
    assert store.get("x", ALICE)["status"]["state"] == COMPLETED
    assert store.get("b", BOB) is not None and store.events("c") == (0, [(0, {"statusUpdate": {}})])
    assert store.stats()["tasks"] == 5                                 # f, a, b, c, x


def test_sqlite_a_group_of_new_tasks_at_a_bound_makes_room_for_all_of_them_at_once(path):
    """A group of new tasks that end as they begin, arriving when their
    caller's share is full, evicts once for all of them (down to a 64th
    below the share) and is inserted in one statement. (Room made for one
    task at a time evicted nothing for the first few, each fitting alone,
    and the rest of the group went the general way one by one: a third of
    the tasks of a busy server, in the benchmark.)"""
    store = a2a_store.SQLiteStore(path, max_tasks=10_000, max_tasks_per_caller=640)
    for i in range(620):
        store.commit(task("old%d" % i, COMPLETED), ALICE, 0)
    general, at_once = [], []
    run_work, insert_at_once = store._run_work, store._insert_at_once
    store._run_work = lambda db, work: (general.append(work), run_work(db, work))[1]
    store._insert_at_once = lambda db, works: at_once.append(len(works)) or insert_at_once(
        db, works)
    outcomes = store.commit_many([(task("new%d" % i, COMPLETED), ALICE, 0) for i in range(16)])
    assert [outcome[1:] for outcome in outcomes] == [(1, None)] * 16
    assert at_once == [16] and store.stats()["tasks"] == 636    # they fit: nothing evicted
    at_once.clear()
    outcomes = store.commit_many([(task("more%d" % i, COMPLETED), ALICE, 0) for i in range(16)])
    assert [outcome[1:] for outcome in outcomes] == [(1, None)] * 16
    assert at_once == [16, 16] and general == []      # refused once, then room for all 16
    # 636 held + 16: the oldest 22 go, down to 640 - 640 // 64 = 630.
    assert store.stats()["tasks"] == 630
    assert store.get("old21", ALICE) is None and store.get("old22", ALICE) is not None
    assert all(store.get("more%d" % i, ALICE) is not None for i in range(16))
    # A group for which no room can be made (the share holds 18 running tasks
    # of 20) goes the general way, one by one, and ends as the in-memory
    # store does, given the same commits one by one: each new task fits, the
    # last two by evicting the first two (the oldest idle ones).
    for small in (a2a_store.SQLiteStore(path + "2", max_tasks_per_caller=20),
                  MemoryTaskStore(max_tasks_per_caller=20)):
        for i in range(18):
            small.commit(task("busy%d" % i), BOB, 0)
        new = [(task("n%d" % i, COMPLETED), BOB, 0) for i in range(4)]
        outcomes = small.commit_many(new) if hasattr(small, "commit_many") else \
            [small.commit(*args) for args in new]
        assert [outcome[1:] for outcome in outcomes] == [(1, None)] * 4
        assert [small.get("n%d" % i, BOB) is not None for i in range(4)] == [False, False,
                                                                              True, True]
        assert small.stats()["tasks"] == 20


def test_sqlite_a_group_at_a_bound_tells_each_eviction_once_committed(path):
    """The tasks evicted for a group's new ones (at its caller's full share)
    are told to on_evict once the group has committed, whichever of its
    works are refused: here the first, whose id is taken, which no room is
    made for. A group whose transaction fails tells of none: its evictions
    were undone."""
    store = a2a_store.SQLiteStore(path, max_tasks_per_caller=10)
    gone = []
    store.on_evict = gone.append
    for i in range(10):
        store.commit(task("old%d" % i, COMPLETED, stamp=i), ALICE, 0)
    outcomes = store.commit_many([(task("old9", COMPLETED), ALICE, 0),
                                  (task("new", COMPLETED), ALICE, 0)])
    assert isinstance(outcomes[0], ConflictError) and outcomes[1][1:] == (1, None)
    assert gone == ["old0"]                         # room for one, not for the refused one
    assert [store.get("old%d" % i, ALICE) is None for i in range(10)] == [True] + [False] * 9
    gone.clear()                                    # (the share is full again: 10)
    db = store._group_db(store._writing())
    db.execute("CREATE TEMP TRIGGER refuse BEFORE INSERT ON tasks WHEN new.id = 'bad' "
               "BEGIN SELECT RAISE(ABORT, 'refused'); END")
    outcomes = store.commit_many([(task("a", COMPLETED), ALICE, 0),
                                  (task("b", COMPLETED), BOB, 0, {"statusUpdate": {}}),
                                  (task("bad"), ALICE, 0)])
    assert all(isinstance(outcome, InternalError) for outcome in outcomes)
    assert gone == [] and not db.in_transaction
    assert all(store.get("old%d" % i, ALICE) is not None for i in range(1, 10))


def test_sqlite_a_write_that_fails_at_commit_leaves_no_transaction_open(path):
    """Whatever fails a store write's COMMIT (here a deferred foreign key, an
    IntegrityError, not the OperationalError of a lock or a full disk), the
    transaction is rolled back: the file's write lock is not left held for
    other processes, and this process's next writes are made."""
    store = a2a_store.SQLiteStore(path, busy_timeout=1)
    group = store._writing()
    with group.turn:
        db = store._group_db(group)
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("CREATE TEMP TABLE parent (id INTEGER PRIMARY KEY)")
        db.execute("CREATE TEMP TABLE child (id REFERENCES parent (id) DEFERRABLE "
                   "INITIALLY DEFERRED)")
    with pytest.raises(sqlite3.IntegrityError):
        with store._write() as db:
            db.execute("INSERT INTO child VALUES (1)")         # refused at COMMIT
    assert not db.in_transaction and not group.turn.locked()
    other = sqlite3.connect(path, isolation_level=None, timeout=1)
    other.execute("BEGIN IMMEDIATE")                           # the write lock is free
    other.execute("ROLLBACK")
    other.close()
    store.commit(task("t1", COMPLETED), ALICE, 0)
    store.put_config("t1", {"id": "a"}, 3)
    assert store.get("t1", ALICE) is not None and len(store.configs("t1")) == 1


def test_sqlite_tidy_evicts_ahead_of_need_in_small_batches(path):
    """tidy() (the watch thread's, every store_poll) evicts the expired tasks,
    and the oldest idle ones once the store or a caller's share is within a
    64th of its bound (down to a 32nd below), at most 64 to a transaction,
    the running ones never."""
    store = a2a_store.SQLiteStore(path, max_tasks=1024, task_ttl=3600)
    store.commit(task("running"), ALICE, 0)
    for i in range(1007):                       # 1008 tasks: not yet past 1024 - 1024/64
        store.commit(task("t%d" % i, COMPLETED), ALICE, 0)
    assert store.tidy() == 0
    store.commit(task("t1007", COMPLETED), ALICE, 0)
    writes = []
    write = store._write
    store._write = lambda: (writes.append(1), write())[1]
    assert store.tidy() == 1009 - (1008 - 1008 // 64)   # the oldest sixteen
    assert len(writes) == 1 and store.stats()["tasks"] == 1008 - 1008 // 64
    assert store.get("t15", ALICE) is None and store.get("t16", ALICE) is not None
    store._write = write
    shares = a2a_store.SQLiteStore(path, max_tasks=10_000, max_tasks_per_caller=640)
    assert shares.tidy() == 993 - (630 - 630 // 64)     # ALICE's share, likewise
    assert shares.get("running", ALICE) is not None and shares.get("t16", ALICE) is None
    time.sleep(0.01)
    shares.task_ttl = 0.001                     # every idle task has expired
    assert shares.tidy() == 621 - 1 and shares.stats()["tasks"] == 1
    assert shares.get("running", ALICE) is not None


def test_sqlite_a_lone_writer_never_waits_for_company(path):
    """commit_delay applies only while commits come together: one thread
    committing alone is never made to wait."""
    store = a2a_store.SQLiteStore(path, commit_delay=5.0)
    started = time.monotonic()
    for i in range(50):
        store.commit(task("t%d" % i, COMPLETED), ALICE, 0)
    assert time.monotonic() - started < 5.0


def test_sqlite_not_waiting_reads_but_refuses_a_write_before_it_begins(sqlite_store):
    """Inside not_waiting() (an event loop's), reads are served and a write
    raises _WouldWait (a BaseException: no request boundary takes it for an
    error) having written nothing; outside it, the same write is made."""
    store = sqlite_store
    store.commit(task("t1"), ALICE, 0)
    with store.not_waiting():
        assert store.get("t1", ALICE)["id"] == "t1" and store.list(ALICE)[1] == 1
        for write in (lambda: store.commit(task("t2"), ALICE, 0),
                      lambda: store.put_config("t1", {"id": "a"}, 3),
                      lambda: store.delete("t1")):
            with pytest.raises(a2a_store._WouldWait):
                write()
    assert not issubclass(a2a_store._WouldWait, Exception)
    assert store.get("t2", ALICE) is None and store.configs("t1") == []
    store.commit(task("t2"), ALICE, 0)
    assert store.get("t2", ALICE) is not None


def _hold_write_lock(path):
    """Another process's write lock on the file: a connection in BEGIN IMMEDIATE."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_sqlite_not_waiting_claims_a_send_unless_it_would_wait(path):
    """Inside not_waiting() (a SendMessage answered on an event loop) a send is
    claimed on the connection that never waits; while another process holds
    the write lock, _WouldWait, with nothing written, and the request runs
    again on a thread, where the claim waits for the lock."""
    store = a2a_store.SQLiteStore(path, busy_timeout=10)
    with store.not_waiting():
        assert store.claim_send(ALICE, "m1", "t1", 60) is None
        assert _first(store.claim_send(ALICE, "m1", "t", 60)) == ["t1", None, None]
        store.settle_send(ALICE, "m1", REPLY, "dr")
    assert _first(store.claim_send(ALICE, "m1", "t", 60)) == ["t1", REPLY, "dr"]
    other = _hold_write_lock(path)
    with store.not_waiting():
        with pytest.raises(a2a_store._WouldWait):
            store.claim_send(ALICE, "m2", "t2", 60)
    threading.Timer(0.3, other.execute, ("COMMIT",)).start()     # (then it is let go)
    assert store.claim_send(ALICE, "m2", "t2", 60) is None
    assert sql(store, "SELECT key FROM sends ORDER BY key") == [("m1",), ("m2",)]


def test_sqlite_a_request_run_again_takes_over_the_send_it_claimed_on_the_loop(path):
    """A request that claimed on the loop, then met a write that would wait
    (its claim not freed: the lock was held), runs again on a store thread:
    its claim there is first again (its task id is new), not a repeat of
    itself, whether or not the task of the first run exists (a message that
    continues a task names it both times). Another key's record, or one
    that got a reply, is not taken over."""
    store = a2a_store.SQLiteStore(path, busy_timeout=10)
    store.commit(task("t-existing"), ALICE, 0)
    for key, task_id, new_id in (("new", "t-loop", "t-thread"),
                                 ("continuing", "t-existing", "t-existing")):
        with pytest.raises(a2a_store._WouldWait):
            with store.not_waiting():
                assert store.claim_send(ALICE, key, task_id, 60) is None
                other = _hold_write_lock(path)
                try:
                    store.settle_send(ALICE, key, None)      # (its refusal: cannot free it now)
                    raise a2a_store._WouldWait()             # (its write, as continue_task's)
                finally:
                    other.execute("ROLLBACK")
        assert store.claim_send(ALICE, key, new_id, 60) is None
        assert _first(store.claim_send(ALICE, key, "t", 60)) == [new_id, None, None]
    # A claim abandoned that meanwhile has a reply (it cannot: a stand-in) stays.
    with pytest.raises(a2a_store._WouldWait):
        with store.not_waiting():
            store.claim_send(ALICE, "replied", "t-r", 60)
            sql(store, "UPDATE sends SET reply = ?, digest = 'dr' WHERE key = 'replied'",
                (json.dumps(REPLY).encode(),))
            raise a2a_store._WouldWait()
    assert _first(store.claim_send(ALICE, "replied", "t2", 60)) == ["t-r", REPLY, "dr"]


def test_sqlite_a_send_refused_or_answered_on_the_loop_is_settled_later_if_it_would_wait(path):
    """Inside not_waiting(), settle_send never waits: a reply, or the freeing
    of a key whose send was refused (the block ends with that error), is
    written on a thread once the write lock is let go."""
    store = a2a_store.SQLiteStore(path, busy_timeout=10)
    with pytest.raises(InvalidParamsError):
        with store.not_waiting():
            assert store.claim_send(ALICE, "refused", "t1", 60) is None
            assert store.claim_send(ALICE, "answered", "t2", 60) is None
            other = _hold_write_lock(path)
            store.settle_send(ALICE, "answered", REPLY, "dr")
            store.settle_send(ALICE, "refused", None)
            raise InvalidParamsError("refused")
    time.sleep(0.2)
    assert sql(store, "SELECT key, reply FROM sends ORDER BY key") == [("answered", None),
                                                                       ("refused", None)]
    other.execute("COMMIT")
    deadline = time.monotonic() + 10
    while sql(store, "SELECT key, reply IS NULL FROM sends") != [("answered", 0)]:
        assert time.monotonic() < deadline, sql(store, "SELECT key, reply FROM sends")
        time.sleep(0.02)
    assert store.claim_send(ALICE, "refused", "t3", 60) is None
    assert _first(store.claim_send(ALICE, "answered", "t", 60)) == ["t2", REPLY, "dr"]


def test_sqlite_commit_many_commits_together_or_never_waits(path):
    """commit_many() makes several commits in one transaction, each with its
    own outcome (a refused one does not undo the others). With wait=False,
    a write lock held by another process gets _WouldWait at once and
    nothing is written; with wait=True it waits for the lock."""
    store = a2a_store.SQLiteStore(path, busy_timeout=5)
    store.commit(task("x"), ALICE, 0)
    outcomes = store.commit_many([(task("a", COMPLETED), ALICE, 0), (task("x"), ALICE, 0),
                                  (task("b"), BOB, 0, {"statusUpdate": {}})])
    assert outcomes[0] == (outcomes[0][0], 1, None) and outcomes[2][1:] == (1, 0)
    assert isinstance(outcomes[1], ConflictError)
    assert store.get("a", ALICE) is not None and store.events("b") == (0, [(0, {
        "statusUpdate": {}})])
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(a2a_store._WouldWait):
            store.commit_many([(task("c", COMPLETED), ALICE, 0)], wait=False)
        assert time.monotonic() - started < 1.0
        box = {}
        waiter = threading.Thread(target=lambda: box.update(
            out=store.commit_many([(task("c", COMPLETED), ALICE, 0)])))
        waiter.start()
        time.sleep(0.2)
        assert waiter.is_alive()
    finally:
        other.execute("ROLLBACK")
        other.close()
    waiter.join(10)
    assert box["out"][0][1:] == (1, None) and store.get("c", ALICE) is not None


def test_sqlite_changed_moves_when_another_connection_commits(path):
    """changed() moves for another store's (process's) commit, not for this
    one's; a task read again is decoded once per version, and never served
    from the cache once another wrote a newer one."""
    store, other = a2a_store.SQLiteStore(path), a2a_store.SQLiteStore(path)
    store.commit(task("t1"), ALICE, 0)
    cached = store.get("t1", ALICE)
    assert store.get("t1", ALICE) is cached              # decoded once per version
    before = store.changed()
    other.commit(task("t1", stamp=1), ALICE, 1)
    assert store.changed() != before
    assert store.get("t1", ALICE) == task("t1", stamp=1)


def test_sqlite_a_task_made_again_elsewhere_is_not_served_from_the_cache(path):
    """Deleted and made again by another process, a task is version 1 again:
    the cache tells the two apart (by row number), not by version alone."""
    store, other = a2a_store.SQLiteStore(path), a2a_store.SQLiteStore(path)
    store.commit(task("t1", context="first"), ALICE, 0)
    assert store.get("t1", ALICE)["contextId"] == "first"
    other.delete("t1")
    other.commit(task("t1", context="second"), ALICE, 0)
    assert store.get("t1", ALICE)["contextId"] == "second"


def test_sqlite_threads_borrow_a_few_connections_not_one_each(sqlite_store):
    """Connections are lent for a statement or a transaction and given back:
    200 threads (a threaded host's client connections) open at most
    ``connections`` of them, not one each (two open files apiece), and keep
    _IDLE_CONNECTIONS once done."""
    store = sqlite_store
    store.commit(task("t1"), ALICE, 0)
    errors = []

    def work(i):
        try:
            store.commit(task(f"x{i}"), ALICE, 0, {"statusUpdate": {}})
            assert store.get(f"x{i}", ALICE).version == 1
        except Exception as error:        # reported below
            errors.append(error)
    for batch in range(4):
        threads = [threading.Thread(target=work, args=(batch * 50 + i,)) for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert len(store._pool[1]) <= a2a_store._IDLE_CONNECTIONS
    files = os.listdir(f"/proc/{os.getpid()}/fd")
    opened = sum(os.path.realpath(f"/proc/{os.getpid()}/fd/{fd}") == os.path.realpath(store.path)
                 for fd in files if os.path.exists(f"/proc/{os.getpid()}/fd/{fd}"))
    assert opened <= store.connections + 2


def _in_child(work):
    """Run ``work()`` in a forked child; returns its pid. It exits 0 if work()
    returned True, 2 if False, 1 if it raised."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if work() else 2
        finally:
            os._exit(code)
    return pid


def _append_until_committed(store, who, i, key):
    """Read t1, add message "{who}-{i}" and a statusUpdate {key: who, "i": i},
    commit over the version read; on ConflictError read again and retry."""
    while True:
        current = store.get("t1", ALICE)
        history = current["history"] + [{"messageId": f"{who}-{i}"}]
        try:
            store.commit(task("t1", history=history), ALICE, current.version,
                         {"statusUpdate": {key: who, "i": i}})
            return
        except ConflictError:
            continue


def sql(store, query, args=()):
    """Rows of a query on a connection the store lends."""
    with store._db() as db:
        return db.execute(query, args).fetchall()


def _exit_code(pid, timeout=60):
    """The child's exit code; a child that hangs (a fork taken while another
    thread held a lock) is killed and fails the test, never hangs it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail(f"child {pid} did not finish within {timeout} s")


def _read_within(fd, timeout=60):
    """One byte from the pipe ``fd``, or fail after ``timeout`` seconds."""
    poller = select.poll()                     # (select() cannot take an fd past 1023)
    poller.register(fd, select.POLLIN)
    assert poller.poll(timeout * 1000), "the child never wrote"
    return os.read(fd, 1)


def test_sqlite_a_forked_process_opens_its_own_connection(sqlite_store):
    """A connection opened before fork() is never used in the child (nor
    closed: that would drop the parent's locks); the child opens its own, and
    the parent goes on with its own."""
    store = sqlite_store
    store.commit(task("t1"), ALICE, 0)
    before = list(store._pool[1])              # the parent's idle connections
    assert before

    def work():
        with store._db() as db:
            ok = db not in before and store._pool[0] == os.getpid()
        ok = ok and all(c in store._inherited for c in before)
        store.commit(task("t1"), ALICE, 1)
        return ok
    assert _exit_code(_in_child(work)) == 0
    assert store._pool[1] == before and store.get("t1", ALICE).version == 2


def test_sqlite_processes_writing_one_task_lose_no_update(path):
    """4 processes × 100 read-change-commit rounds on one task, retrying on
    ConflictError: 400 versions, events 0..400 without a gap, each process's
    in its order, the history its last 100 messages."""
    store = a2a_store.SQLiteStore(path, replay_buffer=1000, busy_timeout=30)
    store.commit(task("t1", history=[]), ALICE, 0, {"task": {}})
    store.get("t1", ALICE)                               # the parent has a connection, a cache

    def work():
        for i in range(100):
            _append_until_committed(store, os.getpid(), i, "pid")
        return True
    pids = [_in_child(work) for _ in range(4)]
    assert [_exit_code(pid) for pid in pids] == [0, 0, 0, 0]
    final = store.get("t1", ALICE)
    assert final.version == 401 and final.next_seq == 401
    oldest, events = store.events("t1")
    assert oldest == 0 and [seq for seq, _ in events] == list(range(401))
    per_pid = {}
    for _, event in events[1:]:
        per_pid.setdefault(event["statusUpdate"]["pid"], []).append(event["statusUpdate"]["i"])
    assert sorted(per_pid) == sorted(pids)
    assert all(steps == list(range(100)) for steps in per_pid.values())
    assert len(final["history"]) == 100
    assert final["history"][-1]["messageId"] in {f"{pid}-99" for pid in pids}


def test_sqlite_a_lease_is_seen_by_every_process(path):
    """Leases live in the file: another process's store sees a lease run out
    when its holder stops renewing, and not while it renews."""
    store = a2a_store.SQLiteStore(path, lease_ttl=0.3)
    started = time.monotonic()
    store.commit(task("t1"), ALICE, 0, holder="p1")
    store.commit(task("t2"), BOB, 0, holder="p2")
    ready, renewing = os.pipe()

    def work():
        other = a2a_store.SQLiteStore(path, lease_ttl=0.3)
        for i in range(5):
            other.renew("p2")
            if i == 0:
                os.write(renewing, b"!")
            time.sleep(0.1)
        return True
    pid = _in_child(work)
    os.close(renewing)
    assert _read_within(ready) == b"!"
    os.close(ready)
    time.sleep(max(0.15, 0.35 - (time.monotonic() - started)))
    assert store.expired() == [("t1", ALICE)]
    assert _exit_code(pid) == 0
    time.sleep(0.35)
    assert sorted(store.expired()) == [("t1", ALICE), ("t2", BOB)]


def test_configs_are_kept_only_with_a_stored_task_and_count_in_its_size(store):
    """A config for a task that is gone (evicted since it was read) is refused,
    never kept without its task; a config's bytes count in its task's size
    (and so in the store's budget) until it or the task goes."""
    with pytest.raises(a2a_min.TaskNotFoundError):
        store.put_config("nobody", {"id": "a", "url": "http://x/"}, 3)
    assert store.configs("nobody") == []
    store.commit(task("t1", INPUT_REQUIRED), ALICE, 0)
    before = store.stats()["bytes"]
    store.put_config("t1", {"id": "a", "url": "http://x/" + "p" * 5000}, 3)
    grown = store.stats()["bytes"]
    assert grown >= before + 5000
    store.commit(task("t1", state="TASK_STATE_COMPLETED"), ALICE, 1)  # a commit keeps them counted
    assert store.stats()["bytes"] >= before + 5000
    store.delete_config("t1", "a")
    assert store.stats()["bytes"] < before + 1000
    store.put_config("t1", {"id": "b", "url": "http://x/" + "p" * 5000}, 3)
    store.delete("t1")
    assert store.stats()["bytes"] == 0 and store.stats()["tasks"] == 0


def _old_file(path, version):
    """A connection to a new file of schema ``version``, in a write transaction."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("BEGIN IMMEDIATE")
    for step in a2a_store._SQLITE_MIGRATIONS[:version]:
        for statement in step:
            db.execute(statement)
    db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(version),))
    return db


def test_sqlite_a_version_1_file_is_brought_to_version_2(path):
    """A file made with schema version 1 (before push configs counted in a
    task's size) opens: brought forward in one transaction, its configs'
    bytes counted, and writable."""
    db = _old_file(path, 1)
    db.execute("INSERT INTO tasks (id, owner, caller, context_id, state, stamp, idle_ms, "
               "version, next_seq, first_seq, event_bytes, size, body) VALUES ('t1', ?, ?, "
               "'ctx', 'TASK_STATE_WORKING', '', NULL, 1, 0, 0, 0, 60, ?)",
               (a2a_store._key(ALICE), a2a_store._key(ALICE), b'{"id":"t1","status":{}}'.ljust(60)))
    db.execute("INSERT INTO push_configs (task_id, id, body) VALUES ('t1', 'a', ?)",
               (b"x" * 500,))
    db.execute("COMMIT")
    db.close()
    store = a2a_store.SQLiteStore(path)
    assert sql(store, "SELECT value FROM meta") == [(str(a2a_store.SQLITE_SCHEMA_VERSION),)]
    assert sql(store, "SELECT config_bytes, size FROM tasks") == [(500, 560)]
    assert store.stats()["bytes"] == 560


def test_sqlite_a_version_2_file_is_brought_to_version_3(path):
    """Version 3 writes fewer pages a commit: the totals move into the
    ``callers`` table (caller ''), tasks are numbered from ``made`` instead
    of AUTOINCREMENT, one index of idle tasks, tasks_by_owner ascending. A
    version 2 file keeps every task, event, config, lease and count, and a
    task made after it is numbered above every number used before, even
    that of a task since deleted."""
    db = _old_file(path, 2)
    insert = ("INSERT INTO tasks (id, owner, caller, context_id, state, stamp, idle_ms, version, "
              "next_seq, first_seq, event_bytes, size, body) VALUES (?, ?, ?, 'ctx', ?, ?, ?, 1, "
              "?, 0, ?, ?, ?)")
    now = int(time.time() * 1000)
    for task_id, who, state, idle in (("t1", ALICE, WORKING, None), ("t2", BOB, COMPLETED, now),
                                      ("t3", ALICE, COMPLETED, now)):
        body = json.dumps(task(task_id, state)).encode()
        db.execute(insert, (task_id, a2a_store._key(who), a2a_store._key(who), state, _stamp(1),
                            idle, 1 if task_id == "t1" else 0, 9 if task_id == "t1" else 0,
                            len(body) + (9 if task_id == "t1" else 0), body))
    db.execute("INSERT INTO events VALUES ('t1', 0, ?)", (b'{"task":{}}',))
    config = json.dumps({"id": "a", "url": "http://127.0.0.1:9/hook"}).encode()
    db.execute("INSERT INTO push_configs (task_id, id, body) VALUES ('t1', 'a', ?)", (config,))
    db.execute("INSERT INTO leases VALUES ('t1', 'p1', 1)")
    db.execute("DELETE FROM tasks WHERE id = 't3'")        # the highest number, now unused
    before = db.execute("SELECT tasks, bytes FROM totals").fetchone()
    db.execute("COMMIT")
    db.close()
    store = a2a_store.SQLiteStore(path)
    assert sql(store, "SELECT value FROM meta") == [(str(a2a_store.SQLITE_SCHEMA_VERSION),)]
    stats = store.stats()
    assert (stats["tasks"], stats["bytes"], stats["callers"]) == before + (2,)
    assert store.get("t1", ALICE)["id"] == "t1" and store.get("t2", BOB) is not None
    assert store.events("t1") == (0, [(0, {"task": {}})])
    assert store.configs("t1") == [json.loads(config)]
    assert sql(store, "SELECT config_bytes FROM tasks WHERE id = 't1'") == [(len(config),)]
    assert store.expired() == [("t1", ALICE)]
    tables = {name for (name,) in sql(store, "SELECT name FROM sqlite_master")}
    assert "totals" not in tables and "tasks_idle_by_caller" not in tables
    assert "DESC" not in sql(store, "SELECT sql FROM sqlite_master WHERE name = "
                                    "'tasks_by_owner'")[0][0]
    store.commit(task("t4", COMPLETED), ALICE, 0)
    store.commit(task("t5", WORKING), ALICE, 0)
    numbers = dict(sql(store, "SELECT id, n FROM tasks"))
    assert numbers["t4"] > 3 and numbers["t5"] > numbers["t4"]      # t3 was number 3
    assert store.stats()["tasks"] == 4
    assert [t["id"] for t in store.list(ALICE)[0]] == ["t1", "t5", "t4"]     # newest stamp first


def _old_file_with_a_task(path, version):
    """An SQLite file of an older schema ``version`` holding ALICE's WORKING
    task t1 (version 4's and 5's tables), its connection open."""
    db = _old_file(path, version)
    body = json.dumps(task("t1")).encode()
    db.execute("INSERT INTO tasks (n, id, owner, caller, context_id, state, stamp, idle_ms, "
               "version, next_seq, first_seq, event_bytes, size, body) VALUES (1, 't1', ?, ?, "
               "'ctx', ?, ?, NULL, 1, 0, 0, 0, ?, ?)",
               (a2a_store._key(ALICE), a2a_store._key(ALICE), WORKING, _stamp(1), len(body),
                body))
    db.execute("UPDATE callers SET tasks = 1, bytes = ?, made = 1 WHERE caller = ''",
               (len(body),))
    db.execute("COMMIT")
    return db


def test_sqlite_a_version_4_file_keeps_its_tasks(path):
    """Version 5 added a column (the trace that made a task, no longer
    written): a version 4 file is brought to it, and its tasks are read and
    changed as before, new ones made beside them."""
    db = _old_file_with_a_task(path, 4)
    db.close()
    store = a2a_store.SQLiteStore(path)
    assert sql(store, "SELECT value FROM meta") == [(str(a2a_store.SQLITE_SCHEMA_VERSION),)]
    got = store.get("t1", ALICE)
    assert got == task("t1")
    store.commit(task("t1", COMPLETED), ALICE, 1)
    store.commit(task("t2", COMPLETED), ALICE, 0)
    assert store.get("t1", ALICE) == task("t1", COMPLETED)
    assert store.get("t2", ALICE) == task("t2", COMPLETED)


def test_sqlite_a_version_5_file_gets_the_sends_table(path):
    """Version 6 added ``sends`` (idempotent sends): a version 5 file is
    brought to it, keeps its tasks, and records sends from then on."""
    db = _old_file_with_a_task(path, 5)
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 'sends'").fetchall() == []
    db.close()
    store = a2a_store.SQLiteStore(path)
    assert sql(store, "SELECT value FROM meta") == [(str(a2a_store.SQLITE_SCHEMA_VERSION),)]
    assert a2a_store.SQLITE_SCHEMA_VERSION == 6
    assert store.get("t1", ALICE) == task("t1")
    assert store.claim_send(ALICE, "m1", "t1", 60) is None
    store.settle_send(ALICE, "m1", REPLY, "d1")
    again = a2a_store.SQLiteStore(path)                     # (a restart: the record stays)
    assert _first(again.claim_send(ALICE, "m1", "t", 60)) == ["t1", REPLY, "d1"]
    assert [r[1] for r in sql(store, "PRAGMA table_info(sends)")] == [
        "owner", "key", "digest", "task_id", "at", "reply"]


def test_sqlite_processes_claiming_one_send_at_once_one_is_first(path):
    """6 processes claim one key at the same moment, each on its own store:
    exactly one is first (exit 0), and the others see its task id (exit 2)."""
    a2a_store.SQLiteStore(path)
    ready, go = os.pipe()

    def work():
        store = a2a_store.SQLiteStore(path)
        os.read(ready, 1)                       # all at once
        pid = os.getpid()
        first = store.claim_send(ALICE, "m1", f"t{pid}", 60)
        if first is None:
            return True
        assert first[0] != f"t{pid}"                          # (else exit 1)
        return False
    pids = [_in_child(work) for _ in range(6)]
    os.write(go, b"!" * 6)
    codes = [_exit_code(pid) for pid in pids]
    assert sorted(codes) == [0, 2, 2, 2, 2, 2], codes
    first = pids[codes.index(0)]
    assert sql(a2a_store.SQLiteStore(path), "SELECT digest, task_id FROM sends") == [
        (None, f"t{first}")]


def test_sqlite_damage_found_while_serving_names_the_file_and_the_fix(path):
    """A file whose header is sound but whose pages are damaged opens; the
    requests that meet the damage get InternalError naming the file and what
    to do, not a bare traceback."""
    store = a2a_store.SQLiteStore(path)
    for i in range(200):
        store.commit(task(f"t{i}", pad="x" * 2000), ALICE, 0)
    sql(store, "PRAGMA wal_checkpoint(TRUNCATE)")
    store = None
    with open(path, "r+b") as f:                 # a checkpointed file: damage past the header
        size = os.path.getsize(path)
        for at in range(size // 8192 * 4096, size, 4096):   # page headers, past the schema's
            f.seek(at)
            f.write(b"\xff" * 8)
    damaged = a2a_store.SQLiteStore(path)
    with pytest.raises(InternalError) as caught:
        for i in range(200):
            damaged.get(f"t{i}", ALICE)
        damaged.list(ALICE, limit=100)
    assert "damaged" in caught.value.message and "backup" in caught.value.message


def test_sqlite_processes_opening_a_new_file_at_once_all_start(tmp_path):
    """Workers starting together on a file nobody made yet (gunicorn -w 4 on
    a fresh A2A_STORE): each one opens it, and the schema is made once."""
    path = str(tmp_path / "new.db")
    ready, go = os.pipe()

    def work():
        os.read(ready, 1)                      # all at once
        store = a2a_store.SQLiteStore(path)
        store.commit(task(f"t{os.getpid()}"), ALICE, 0)
        return True
    pids = [_in_child(work) for _ in range(6)]
    first = sqlite3.connect(path, isolation_level=None)   # the first worker, making it
    first.execute("BEGIN IMMEDIATE")
    first.execute("CREATE TABLE early (a)")
    os.write(go, b"!" * 6)
    time.sleep(0.3)                            # the others find it locked, and wait
    first.execute("COMMIT")
    first.close()
    assert [_exit_code(pid) for pid in pids] == [0] * 6
    assert a2a_store.SQLiteStore(path).stats()["tasks"] == 6
