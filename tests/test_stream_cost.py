"""What a streamed turn costs: linear in what it streams, on every store, and
bounded per turn.

An agent that streams a long answer produces one artifact update per chunk
(a token, a line). If each one made the store encode and write the whole
task again, a turn of N chunks would cost the square of N: 10,000 tokens
took 14 s in memory, a program's 15,000 lines 39 s. The tests count work,
never time it: the bytes of task JSON a store writes over a turn of N and
of 2N chunks (linear: twice, give or take; the square: four times), and
whether an append copies the parts before it. The per-turn bounds
(max_turn_events, max_turn_bytes) fail a turn past them, saying which.
"""

import asyncio
import json
import threading
import time

import pytest

import a2a_min
import a2a_store
from conftest import postgres_server, postgres_store
from harness import Client, MemoryTaskStore, user_message

# Chunks of the shorter turn, per store (a PostgreSQL commit is a round trip).
CHUNKS = {"memory": 5000, "sqlite": 2000, "postgres": 2000}


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request, tmp_path):
    if request.param == "postgres":
        postgres_server()               # (or a skip saying what is missing)
    files = iter(range(100))

    def make():
        if request.param == "memory":
            return MemoryTaskStore()
        if request.param == "postgres":
            return postgres_store()
        return a2a_store.SQLiteStore(str(tmp_path / f"tasks{next(files)}.db"))
    make.kind = request.param
    return make


def _counted(store):
    """``store`` with its commits counted: [bytes of task JSON written, commits]
    (a commit that writes only its event returns None for the JSON)."""
    written = [0, 0]
    commit = store.commit

    def counting(*args, **kwargs):
        result = commit(*args, **kwargs)
        written[0] += len(result[0] or b"")
        written[1] += 1
        return result
    store.commit = counting
    return written


def _token_agent(count):
    def agent(ctx):
        for i in range(count):
            yield "tok%d " % i
    return agent


def _streamed(make_store, count):
    """[bytes of task JSON written, commits] over one turn of ``count`` chunks."""
    store = make_store()
    written = _counted(store)
    # (Bytes are counted, not time: a disk that is slow today must not end the wait first.)
    server = a2a_min.Server(_token_agent(count), store=store, blocking_timeout=900)
    task = Client(server).result("SendMessage", {"message": user_message("go")})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    parts = task["artifacts"][0]["parts"]
    assert len(parts) == count and parts[-1] == {"text": "tok%d " % (count - 1)}
    return written


def test_a_streamed_turn_writes_the_task_in_bytes_linear_in_its_chunks(make_store):
    """Twice the chunks, about twice the task JSON written (it was four
    times: the whole task at every chunk), and every chunk still committed
    (its event stored, in order, for the streams and Last-Event-ID): one
    commit a chunk, on every store."""
    count = CHUNKS[make_store.kind]
    once, twice = _streamed(make_store, count), _streamed(make_store, 2 * count)
    assert twice[1] == once[1] + count                # one commit a chunk
    assert twice[0] < 2.5 * once[0], (once, twice)


def test_readers_see_every_chunk_while_the_store_keeps_them_as_events(make_store):
    """While a turn streams, GetTask and ListTasks (another process, for a
    shared store) see the artifact with every chunk so far, whether the
    store wrote it whole or keeps the newest chunks as events; a stream that
    resumes with Last-Event-ID gets the chunks after it."""
    store = make_store()
    seen = {}

    def agent(ctx):
        for i in range(300):
            yield "c%d," % i
            if i in (10, 150, 299):
                reader = Client(server)
                task = reader.result("GetTask", {"id": ctx.task_id})
                listed = reader.result("ListTasks", {"includeArtifacts": True})["tasks"][0]
                seen[i] = (task, listed)
    server = a2a_min.Server(agent, store=store)
    Client(server).result("SendMessage", {"message": user_message("go")})
    assert sorted(seen) == [10, 150, 299]
    for i, (task, listed) in seen.items():
        # (every chunk so far)
        text = "".join(p["text"] for p in task["artifacts"][0]["parts"])
        assert text == "".join("c%d," % k for k in range(i + 1)), i
        assert listed["artifacts"] == task["artifacts"] and listed["id"] == task["id"]


def test_an_append_grows_the_parts_without_copying_those_before():
    """_Channel.change: an append adds its parts to the list the append before
    made (copying the list at every chunk is the square again); a task
    handed to a reader before (snapshot()) keeps its parts as they were."""
    server = a2a_min.Server(lambda ctx: "x")
    channel = server.live.new_channel(("", None))
    ids = {"taskId": "t", "contextId": "c"}
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    channel.publish(task, {"task": task})

    def update(i):      # (the first appends to an artifact not made yet: it makes it)
        body = {**ids, "append": True, "artifact": {"artifactId": "a", "parts": [
            {"text": str(i)}]}}
        return channel.change("artifactUpdate", body, None, {"artifactUpdate": body})
    update(0)
    lists = [update(i)["artifacts"][0]["parts"] for i in range(1, 31)]
    assert len({id(parts) for parts in lists}) == 1     # the first append's copy, grown
    held = channel.snapshot()
    lists += [update(i)["artifacts"][0]["parts"] for i in range(31, 50)]
    assert len({id(parts) for parts in lists}) == 2     # copied once more for the reader
    assert [p["text"] for p in held["artifacts"][0]["parts"]] == [str(i) for i in range(31)]
    assert [p["text"] for p in server.store.get("t", ("", None))["artifacts"][0]["parts"]] == \
        [str(i) for i in range(50)]
    # No event was grown with the task: each still carries its own one part.
    assert all(len(event["artifactUpdate"]["artifact"]["parts"]) == 1
               for _, event in server.store.events("t")[1] if "artifactUpdate" in event)


# -- a turn's bounds -------------------------------------------------------------------

@pytest.mark.parametrize("limit, value", [("max_turn_events", 100), ("max_turn_bytes", 4000)])
def test_a_turn_past_its_bound_fails_saying_which(limit, value):
    """A turn that produces more events (or bytes of them) than the bound
    ends FAILED with a message naming the bound; what came before stays.
    The agent is stopped there (its generator closed), and a turn within
    the bound completes."""
    closed = []

    def agent(ctx):
        try:
            for i in range(100_000):
                yield "token %d " % i
        finally:
            closed.append(ctx.task_id)
    client = Client(a2a_min.Server(agent, **{limit: value}))
    task = client.result("SendMessage", {"message": user_message("go")})["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    said = task["status"]["message"]["parts"][0]["text"]
    assert limit in said and str(value) in said, said
    assert 10 < len(task["artifacts"][0]["parts"]) <= value
    assert closed == [task["id"]]
    client = Client(a2a_min.Server(_token_agent(8), **{limit: value}))
    task = client.result("SendMessage", {"message": user_message("go")})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_streamed_turn_past_its_bound_ends_the_stream_failed():
    """The stream's client hears why: the last event is FAILED naming the bound."""
    client = Client(a2a_min.Server(_token_agent(1000), max_turn_events=50))
    events = [frame["result"] for _, frame in client.stream(
        "SendStreamingMessage", {"message": user_message("go")})]
    last = events[-1]["statusUpdate"]["status"]
    assert last["state"] == "TASK_STATE_FAILED"
    assert "max_turn_events" in last["message"]["parts"][0]["text"]
    assert sum("artifactUpdate" in e for e in events) <= 50


# -- a plain answer, streamed ------------------------------------------------------

def test_a_streamed_plain_answer_is_one_write_with_the_events_of_three(make_store):
    """An agent that returns a str, streamed (SendStreamingMessage): the
    client hears the Task, the artifact and COMPLETED, numbered 0, 1, 2, which
    the store keeps for a client resuming with Last-Event-ID. The in-memory
    store, which takes several events in one commit (``batches``), is written
    once for the turn; the others once per event."""
    store = make_store()
    written = _counted(store)
    client = Client(a2a_min.Server(lambda text: "echo: " + text, store=store))
    frames = list(client.stream("SendStreamingMessage", {"message": user_message("hi")}))
    assert [seq for seq, _ in frames] == [0, 1, 2]
    task, update, status = (frame["result"] for _, frame in frames)
    assert task["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert update["artifactUpdate"]["artifact"]["parts"] == [{"text": "echo: hi"}]
    assert status["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task_id = task["task"]["id"]
    assert {update["artifactUpdate"]["taskId"], status["statusUpdate"]["taskId"]} == {task_id}
    assert written[1] == (1 if make_store.kind == "memory" else 3), written
    stored = client.result("GetTask", {"id": task_id})
    assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
    assert stored["artifacts"][0]["parts"] == [{"text": "echo: hi"}]
    assert [e for _, e in store.events(task_id)[1]][1:] == [
        {"artifactUpdate": update["artifactUpdate"]}, {"statusUpdate": status["statusUpdate"]}]


# -- what a stream's reader costs --------------------------------------------------

class _NoScan(list):
    """A log's event list that refuses to be scanned (read only by index and slice)."""

    def __iter__(self):
        raise AssertionError("the store scanned a task's whole event log")


def test_a_streams_next_events_are_found_by_their_id_not_by_a_scan():
    """TaskStore.events(task, after) gives exactly the kept events after
    ``after``, for every ``after`` (before the oldest kept, within, past the
    newest), by slicing the log at that id's place: the ids run on by one. A
    scan of the whole log at each read cost a stream of N chunks the square of N."""
    store = MemoryTaskStore(replay_buffer=8)      # (the in-memory one, in every store pass)
    task = {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}
    version = 0
    for i in range(20):
        event = {"artifactUpdate": {"taskId": "t", "contextId": "c",
                                    "artifact": {"artifactId": "a", "parts": [{"text": str(i)}]}}}
        _, version, seq = store.commit(task, "me", version, event)
        assert seq == i
    store._logs["t"].events = _NoScan(store._logs["t"].events)
    for after in range(-1, 22):
        oldest, found = store.events("t", after)
        assert oldest == 12
        assert [seq for seq, _ in found] == list(range(max(after + 1, 12), 20)), after
        assert [e["artifactUpdate"]["artifact"]["parts"][0]["text"] for _, e in found] == [
            str(seq) for seq, _ in found]


def _frames(chunk):
    """The whole SSE frames in one chunk of a stream (each ends in a blank line)."""
    *frames, rest = chunk.split(b"\n\n")
    assert frames and rest == b"", chunk
    return [frame + b"\n\n" for frame in frames]


@pytest.mark.parametrize("size", [5, 20_000])
def test_the_events_ready_together_go_out_in_one_write(size):
    """When a stream's reader looks, the events ready by then (a fast agent's
    chunks, a reader that fell behind) are one chunk of the response, so one
    write on every host, not one each: as many frames as fit in _JOINED
    bytes, each frame whole, in order, none lost."""
    release = threading.Event()

    def agent(ctx):
        for i in range(40):
            yield str(i % 10) * size
        release.wait(10)
    server = a2a_min.Server(agent)
    client = Client(server)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                       "params": {"message": user_message("go")}}).encode()
    response = server.handle_http("POST", "/", "", {"a2a-version": "1.0",
                                                    "content-type": "application/json"}, body)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:           # the 40 chunks stored (ListTasks writes them)
        tasks = client.result("ListTasks", {"includeArtifacts": True})["tasks"]
        if tasks and len(tasks[0].get("artifacts", [{"parts": []}])[0]["parts"]) == 40:
            break
        time.sleep(0.01)
    first = _frames(next(response.stream))
    frame_bytes = len(first[-1])
    if size == 5:                                # all 41 (the task, 40 chunks) at once
        assert len(first) == 41
    else:                                        # as many as reach _JOINED, not more
        joined = [len(frame) for frame in first]
        assert sum(joined[:-1]) < a2a_min._JOINED <= sum(joined) and len(first) < 40
    release.set()
    chunks = list(response.stream)
    frames = first + [frame for chunk in chunks for frame in _frames(chunk)]
    assert all(len(chunk) < a2a_min._JOINED + frame_bytes for chunk in chunks)
    ids = [int(frame.split(b"\n", 1)[0][4:]) for frame in frames]
    # The task, 40 chunks, the empty one that ends the artifact (the 40th went out before
    # the agent ended: lastChunk), COMPLETED.
    assert ids == list(range(len(frames))) and len(frames) == 43
    assert b'"lastChunk":true' in frames[-2]
    assert b"TASK_STATE_COMPLETED" in frames[-1]


# -- an async agent's chunks made without waiting ----------------------------------

def test_an_async_agents_chunks_made_without_waiting_are_one_commit(make_store):
    """An ``async def`` agent's outputs between two awaits are written
    together, on every store (a shared one's writes run on a store thread,
    through the same driver): to a store that ``batches``, one commit for
    the 50 chunks it makes before it waits, one for the 50 after, the last
    with COMPLETED; elsewhere one per event. Either way the last chunk says
    lastChunk itself (it was held, not yet written, when the turn ended),
    readers get the events ids 0, 1, 2, ... in order, and the task holds
    every chunk."""
    async def agent(ctx):
        for i in range(100):
            if i == 50:
                await asyncio.sleep(0)          # it waits: the first 50 go out
            yield "t%d " % i
    store = make_store()
    written = _counted(store)
    client = Client(a2a_min.Server(agent, store=store))
    frames = list(client.stream("SendStreamingMessage", {"message": user_message("go")}))
    assert [seq for seq, _ in frames] == list(range(102))  # the task, 100 chunks, COMPLETED
    chunks = [frame["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"]
              for _, frame in frames[1:-1]]
    assert chunks == ["t%d " % i for i in range(100)]
    assert frames[-2][1]["result"]["artifactUpdate"]["lastChunk"]
    assert frames[-1][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task_id = frames[0][1]["result"]["task"]["id"]
    parts = client.result("GetTask", {"id": task_id})["artifacts"][0]["parts"]
    assert "".join(p["text"] for p in parts) == "".join(chunks)
    batches = getattr(store, "batches", False)  # the task; the first 50; the rest
    assert written[1] == (3 if batches else 102), written


# -- a sync generator's chunks, held while a stream's thread reads -------------------

def _stream_reader(server, text="go"):
    """The frames of a SendStreamingMessage, read on a thread of their own as
    the threaded host reads them: (frames so far, the thread)."""
    from harness import V1, parse_sse
    response = server.handle_http("POST", "/", "", dict(V1), json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
         "params": {"message": user_message(text)}}).encode())
    frames = []

    def read():
        for chunk in response.stream:
            frames.extend(parse_sse(chunk))
    reader = threading.Thread(target=read)
    reader.start()
    return frames, reader


def _chunks(frames):
    return [frame["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"]
            for _, frame in list(frames) if "artifactUpdate" in frame.get("result", {})]


def test_a_sync_generators_chunks_are_each_written_as_it_makes_them(make_store):
    """Each chunk a sync generator yields is committed as it comes, one
    commit each on every store (nothing is held to be joined: issue 51 took
    that shortcut out, its budget held without it); readers get every chunk,
    in order, ids 0, 1, 2, ..., and the empty last chunk that says lastChunk."""
    def agent(ctx):
        for i in range(200):
            yield "t%d " % i
    store = make_store()
    written = _counted(store)
    frames, reader = _stream_reader(a2a_min.Server(agent, store=store))
    reader.join(10)
    assert [seq for seq, _ in frames] == list(range(203))
    assert _chunks(frames) == ["t%d " % i for i in range(200)] + [""]
    assert frames[-1][1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert written[1] == 203, written           # (the task, 200 chunks, the empty last one)


def test_chunks_a_sync_generator_made_reach_readers_while_it_blocks():
    """A generator that yields and then blocks (a model's next tokens are
    slow) does not keep what it yielded from its readers: the stream and
    GetTask have every chunk it made before it blocked.""" 
    go, waited = threading.Event(), []

    def agent(ctx):
        for i in range(10):
            yield "t%d " % i
        waited.append(go.wait(10))              # True: the test let it go on, in time
        yield "end"
    server = a2a_min.Server(agent, store=MemoryTaskStore())
    client = Client(server)
    frames, reader = _stream_reader(server)
    deadline = time.monotonic() + 5
    while len(_chunks(frames)) < 10 and time.monotonic() < deadline:
        time.sleep(0.002)
    assert _chunks(frames) == ["t%d " % i for i in range(10)]
    task_id = frames[0][1]["result"]["task"]["id"]
    parts = client.result("GetTask", {"id": task_id})["artifacts"][0]["parts"]
    assert [p["text"] for p in parts] == ["t%d " % i for i in range(10)]
    go.set()
    reader.join(10)
    assert waited == [True]
    # ("end" says lastChunk itself, or, if the reader wrote it first, an empty chunk after it)
    assert [c for c in _chunks(frames) if c] == ["t%d " % i for i in range(10)] + ["end"]
    assert frames[-2][1]["result"]["artifactUpdate"]["lastChunk"]


def test_listtasks_has_the_chunks_a_generator_made_before_it_blocked():
    """With no thread reading the stream yet, and the generator blocked,
    ListTasks shows every chunk it made: each was written as it came."""
    go = threading.Event()

    def agent(ctx):
        for i in range(10):
            yield "t%d " % i
        go.wait(10)
    server = a2a_min.Server(agent, store=MemoryTaskStore())
    client = Client(server)
    from harness import V1
    response = server.handle_http("POST", "/", "", dict(V1), json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
         "params": {"message": user_message("go")}}).encode())
    deadline, parts = time.monotonic() + 5, []
    while len(parts) < 10 and time.monotonic() < deadline:
        time.sleep(0.002)
        tasks = client.result("ListTasks", {"includeArtifacts": True})["tasks"]
        parts = tasks[0].get("artifacts", [{}])[0].get("parts", []) if tasks else []
    assert [p["text"] for p in parts] == ["t%d " % i for i in range(10)]
    go.set()
    b"".join(response.stream)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_settled_tasks_chunks_are_spliced_from_their_json_not_parsed_again(
        binding, monkeypatch):
    """Once a task has ended, the in-memory store keeps its events as their
    JSON (_EventLog.settle). A stream that reads them then (a reader that
    fell behind a fast agent) splices that JSON into its frames: an
    artifact update is not parsed again to be written again. The frames
    are the chunks, in order, with their ids."""
    from harness import V1, parse_sse
    go = threading.Event()

    def agent(ctx):
        yield "t0 "
        yield "t1 "                             # (each goes out as it comes)
        go.wait(10)
        for i in range(2, 200):                 # ~27 KiB of events: settled at the end
            yield "t%d " % i
    server = a2a_min.Server(agent, store=MemoryTaskStore())
    message = {"message": user_message("go")}
    if binding == "JSONRPC":
        response = server.handle_http("POST", "/", "", dict(V1), json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
             "params": message}).encode())
    else:
        response = server.handle_http("POST", "/message:stream", "", dict(V1),
                                      json.dumps(message).encode())
    frames = iter(response.stream)
    first = parse_sse(next(frames))
    task_id = first[0][1].get("result", first[0][1])["task"]["id"]
    parsed = []
    decode = a2a_min._StoredEvent.decode.__func__
    monkeypatch.setattr(a2a_min._StoredEvent, "decode",
                        classmethod(lambda cls, body: parsed.append(body) or decode(cls, body)))
    go.set()
    deadline = time.monotonic() + 10
    while json.loads(server.handle_http("GET", f"/tasks/{task_id}", "", dict(V1)).body)[
            "status"]["state"] != "TASK_STATE_COMPLETED":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    events = first + parse_sse(b"".join(frames))
    results = [payload.get("result", payload) for _, payload in events]
    chunks = [r["artifactUpdate"]["artifact"]["parts"][0]["text"] for r in results
              if "artifactUpdate" in r]
    assert chunks == ["t%d " % i for i in range(200)] + [""]    # (and the lastChunk one)
    assert [seq for seq, _ in events] == list(range(len(events)))
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert not [body for body in parsed if body.startswith(b'{"artifactUpdate":')]


def test_an_async_agent_that_fails_after_its_chunks_keeps_them_and_ends_failed():
    """Outputs held while the agent ran on are written before the failure it
    then raises: the task has every chunk, and ends FAILED naming the error
    (no chunk says lastChunk: the artifact never ended)."""
    async def agent(ctx):
        for i in range(5):
            yield "t%d " % i
        raise ValueError("broken")
    client = Client(a2a_min.Server(agent))
    frames = list(client.stream("SendStreamingMessage", {"message": user_message("go")}))
    status = frames[-1][1]["result"]["statusUpdate"]["status"]
    assert status["state"] == "TASK_STATE_FAILED" and "ValueError" in str(status["message"])
    task = client.result("GetTask", {"id": frames[0][1]["result"]["task"]["id"]})
    assert "".join(p["text"] for p in task["artifacts"][0]["parts"]) == "t0 t1 t2 t3 t4 "


def test_readers_that_fell_behind_share_one_copy_of_the_task_and_get_no_event_twice():
    """Two subscribers that read nothing while the agent made more events than
    the replay buffer keeps: each is given the task as it is now, one copy of
    its JSON for both (not one each: with tens of such readers on a big task,
    memory grew by the task's size for each), numbered as the newest event,
    and then only what comes after it (the events it holds are not given
    again: a client appending them would show every chunk twice)."""
    more, end = threading.Event(), threading.Event()

    def agent(ctx):
        yield a2a_min.status_update("TASK_STATE_WORKING")
        more.wait(30)
        for i in range(20):
            yield "c%d," % i
        end.wait(30)
    server = a2a_min.Server(agent, store=MemoryTaskStore(replay_buffer=4))
    client = Client(server)
    task_id = client.result("SendMessage", {"message": user_message("go"), "configuration": {
        "returnImmediately": True}})["task"]["id"]
    call = a2a_min.CallContext(headers={"a2a-version": "1.0"})

    def until(done):                 # (GetTask: what the turn has written)
        deadline = time.monotonic() + 10
        while not done(client.result("GetTask", {"id": task_id})):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    try:
        until(lambda task: task["status"]["state"] == "TASK_STATE_WORKING")
        readers = [server.call("SubscribeToTask", {"id": task_id}, call) for _ in range(2)]
        for reader in readers:
            assert "task" in next(reader)[1]
        more.set()
        until(lambda task: len(task.get("artifacts", [{"parts": []}])[0]["parts"]) >= 19)
        behind = [next(reader) for reader in readers]
        assert behind[0][1] is behind[1][1], behind            # one copy for both
        assert "task" in behind[0][1], behind
        seq, whole = behind[0]
        assert "".join(p["text"] for p in whole["task"]["artifacts"][0]["parts"]) == \
            "".join("c%d," % i for i in range(20))
        end.set()
        rest = list(readers[0])
        assert all(later > seq for later, _ in rest)
        texts = [p["text"] for _, e in rest if "artifactUpdate" in e
                 for p in e["artifactUpdate"]["artifact"]["parts"]]
        assert all(not text for text in texts), texts    # (at most the empty closing chunk)
        assert rest[-1][1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        more.set(), end.set()
