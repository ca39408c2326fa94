"""ListTasks paging under concurrent change, on both stores (TaskStore and
SQLiteStore): a property test (Hypothesis).

The promise (a2a_min.py section 4): a page token is the (status timestamp,
id) of the page's last task, a keyset, "so it stays valid whatever is added,
changed or evicted in between". Held here: a client pages through its tasks
(many with equal timestamps, some pages cut short by max_page_bytes) while,
between its pages, tasks are made, updated (a new status timestamp, never
older: the server stamps a change with its clock) and deleted. Then

- no task comes twice;
- the key (timestamp, id) falls strictly from each task to the next, across
  pages: the pages never go back;
- every task that stayed as it was from the first page to the last, and
  matches the filter, comes exactly once: nothing is skipped;
- each page holds what the store holds at that moment: the client's own
  tasks, matching the filter, as they are now, at most ``limit`` of them and
  ``max_page_bytes`` of JSON (or one); ``total`` counts every match; the
  cursor is the page's last key.

How long it searches: A2A_STORE_EXAMPLES inputs per backend (default 300; the
file takes a few seconds). Search longer before a release:

    A2A_STORE_EXAMPLES=2000 python -m pytest -q tests/test_store_paging.py
"""

import os
import tempfile

import pytest

from harness import MemoryTaskStore, need

need("hypothesis", "the paging property needs Hypothesis (the test extra)")
from hypothesis import HealthCheck, event, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import a2a_min  # noqa: E402
import a2a_store  # noqa: E402

EXAMPLES = int(os.environ.get("A2A_STORE_EXAMPLES", "300"))
ALICE, BOB = ("", "alice"), ("", "bob")
STATES = ("TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED")
CONTEXTS = ("a", "b")
PAGE_BYTES = (1 << 20, 400)         # unbounded, or one to three tasks a page

# The memory store, even when A2A_TEST_STORE=sqlite (conftest.py) replaced
# a2a_min.TaskStore for the whole run.
_MEMORY = MemoryTaskStore


def _stamp(second):
    return "2025-01-01T00:%02d:%02d.000Z" % divmod(second, 60)


def _task(task_id, state, second, context, pad):
    return {"id": task_id, "contextId": context,
            "status": {"state": state, "timestamp": _stamp(second)}, "metadata": {"pad": pad}}


def _key(task):
    return task["status"]["timestamp"], task["id"]


ids = st.text(alphabet="abcxyz", min_size=1, max_size=3)
new_tasks = st.tuples(st.sampled_from(STATES), st.integers(0, 3),     # few seconds: ties
                      st.sampled_from(CONTEXTS), st.integers(0, 120),
                      st.integers(0, 4).map(lambda n: n == 0))        # one in five: BOB's
# What happens between two pages: (kind, which task, clock step, new state, pad)
changes = st.lists(st.tuples(st.sampled_from(("update", "update", "delete", "create")),
                             st.integers(0, 1000), st.integers(0, 1),
                             st.sampled_from(STATES), st.integers(0, 120)), min_size=1, max_size=6)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), names=st.lists(ids, min_size=8, max_size=40, unique=True),
       limit=st.integers(1, 4), page_bytes=st.sampled_from(PAGE_BYTES),
       context_id=st.sampled_from((None, None) + CONTEXTS),         # mostly no filter:
       status=st.sampled_from((None, None, None) + STATES))         # pages enough to change
def test_paging_under_concurrent_change_never_repeats_nor_goes_back(
        backend, data, names, limit, page_bytes, context_id, status):
    with tempfile.TemporaryDirectory() as folder:
        store = (_MEMORY(max_page_bytes=page_bytes) if backend == "memory" else
                 a2a_store.SQLiteStore(os.path.join(folder, "t.db"), max_page_bytes=page_bytes))
        _page_through(store, data, names, limit, page_bytes, context_id, status)


def _page_through(store, data, names, limit, page_bytes, context_id, status):
    model = {}                          # id -> (owner, task as stored)

    def matches(owner, t):
        return (owner == ALICE and (context_id is None or t["contextId"] == context_id)
                and (status is None or t["status"]["state"] == status))

    for name in names:
        state, second, context, pad, bobs = data.draw(new_tasks)
        owner = BOB if bobs else ALICE
        model[name] = (owner, _task(name, state, second, context, "x" * pad))
        store.commit(model[name][1], owner, 0)
    now = 4                             # the clock: never behind any timestamp
    stable = {i for i, (owner, t) in model.items() if matches(owner, t)}
    seen, keys, cursor, made, changed = set(), [], None, 0, 0
    for pages in range(1, 4 * len(names) + 10):     # more than enough pages
        tasks, total, cursor = store.list(ALICE, context_id=context_id, status=status,
                                          cursor=cursor, limit=limit)
        assert total == sum(matches(*entry) for entry in model.values())
        assert len(tasks) <= limit
        assert len(tasks) <= 1 or sum(len(a2a_min._dumps(t)) for t in tasks) <= page_bytes
        for t in tasks:
            owner, stored = model[t["id"]]
            assert t == stored and matches(owner, t), "a page shows the task as it is now"
            assert t["id"] not in seen, f"{t['id']} came twice"
            assert not keys or _key(t) < keys[-1], "the pages went back"
            seen.add(t["id"])
            keys.append(_key(t))
        if cursor is None:
            break
        assert tasks and tuple(cursor) == keys[-1]
        for kind, which, step, state, pad in data.draw(changes):
            changed += 1
            now += step
            if kind == "create":
                made += 1
                name = "new%d" % made
                model[name] = (ALICE, _task(name, state, now, CONTEXTS[made % 2], "y" * pad))
                store.commit(model[name][1], ALICE, 0)
                continue
            if not model:
                continue
            name = sorted(model)[which % len(model)]
            owner, old = model[name]
            stable.discard(name)
            if kind == "delete":
                store.delete(name)
                del model[name]
            elif old["status"]["state"] not in a2a_min.TERMINAL_STATES:
                new = _task(name, state, now, old["contextId"], "z" * pad)
                store.commit(new, owner, store.get(name, owner).version)
                model[name] = (owner, new)
    else:
        pytest.fail("the cursor never ran out")
    event("pages: " + ("1" if pages == 1 else "2-4" if pages <= 4 else "5 or more"))
    event("changed between pages" if changed else "nothing changed between pages")
    assert stable <= seen, f"skipped although unchanged: {sorted(stable - seen)}"


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_timestamp_made_older_would_be_seen(backend, tmp_path):
    """The property is not vacuous: an update that made a timestamp older
    (which the server never does) brings a task back past the cursor, a
    repeat the checks above would catch."""
    store = _MEMORY() if backend == "memory" else a2a_store.SQLiteStore(str(tmp_path / "t.db"))
    for i, name in enumerate("abc"):
        store.commit(_task(name, STATES[0], 5 + i, "a", ""), ALICE, 0)
    first, _, cursor = store.list(ALICE, limit=1)
    store.commit(_task("c", STATES[0], 0, "a", ""), ALICE, 1)      # older: against the rule
    rest, _, _ = store.list(ALICE, limit=10, cursor=cursor)
    assert [t["id"] for t in first + rest] == ["c", "b", "a", "c"]
