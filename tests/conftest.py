"""Shared fixtures: servers in-process and on real loopback sockets. The clients
and helpers behind them are in harness.py."""

import itertools
import logging
import os
import tempfile

import pytest

pytest.register_assert_rewrite("harness")   # its asserts explain themselves, as here

import a2a_min  # noqa: E402  (harness puts the repository on sys.path)
from harness import BINDINGS, Live, grpc_available, need, scenario_agent  # noqa: E402

# A2A_TEST_STORE=sqlite runs the suite again with every server's default store
# an SQLiteStore in a file of its own: the store contract's parity, tested by
# everything the in-memory store is tested by. What never depends on the
# default store is left out (below: CI runs this line as the README has it,
# after the whole suite, and has no time to run everything twice).
if os.environ.get("A2A_TEST_STORE") == "sqlite":
    _folder = tempfile.mkdtemp(prefix="a2a-test-store-")
    _numbers = itertools.count()
    import a2a_store

    class _SQLiteTaskStore(a2a_store.SQLiteStore):
        """An SQLiteStore in a new file, in place of the in-memory TaskStore
        (a class, so a test may subclass TaskStore as it would the real one)."""
        def __init__(self, path=None, **limits):
            super().__init__(path or os.path.join(_folder, f"{next(_numbers)}.db"), **limits)
    a2a_min.TaskStore = _SQLiteTaskStore


# What A2A_TEST_STORE=sqlite leaves out, unless tests are named on the command
# line: the suites that never touch a store's behaviour (the transport, TLS,
# the client's check and its hostile servers, card signing, JWTs, traces and
# metrics, the console, the README and packaging, the tables), those that name the store of every test (the store contract and
# paging suites, PostgreSQL's) or of theirs (the file's growth, a turn's bytes,
# the repeated sends across stores, the 1.1 generations across stores), a client's
# reading of a newer agent's answers,
# the hosts ("via_threads" and the others: the bindings run in-process), the
# 0.3 SDK's client, the browser, and the SSE framing fuzz test (no store).
_SQLITE_LEAVES_OUT_FILES = (
    "test_check.py", "test_signing.py", "test_tls.py", "test_console.py", "test_readme.py",
    "test_first_minutes.py", "test_newcomer.py", "test_packaging.py", "test_http_reader.py",
    "test_architecture.py", "test_tables.py", "test_vectors.py", "test_protojson.py",
    "test_store_contract.py", "test_store_paging.py", "test_generation.py",
    "test_unknown_enums.py", "test_jwt.py", "test_http_server.py", "test_client_hostile.py",
    "test_tracing.py", "test_metrics.py")
_SQLITE_LEAVES_OUT_NAMES = ("postgres", "sdks_0_3", "via_", "browser_", "file_stops_growing",
                            "bytes_linear_in_its_chunks", "sse_stream_frames", "a_shared_store_")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("A2A_TEST_STORE") != "sqlite" or \
            not all(os.path.isdir(arg) for arg in config.args):
        return
    left = [item for item in items if item.path.name in _SQLITE_LEAVES_OUT_FILES
            or any(name in item.nodeid for name in _SQLITE_LEAVES_OUT_NAMES)]
    if left:
        config.hook.pytest_deselected(items=left)
        gone = set(map(id, left))
        items[:] = [item for item in items if id(item) not in gone]


# A suite started as a background job of a shell without job control (as
# .ci/run's side-by-side passes are) inherits SIGINT ignored, and so would
# every process it starts: the Ctrl-C tests would send a signal nobody takes.
# A handler of our own is reset to the default at exec, so children get it.
import signal  # noqa: E402
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# No test may hang the suite (CI has a deadline): a test still running after
# A2A_TEST_TIMEOUT seconds (300) fails, the alarm's exception interrupting
# whatever its main thread waits on; one that cannot be interrupted ends the
# run a minute later, printing every thread's stack.
_TEST_TIMEOUT = int(os.environ.get("A2A_TEST_TIMEOUT", "300"))


class TestTimedOut(Exception):
    """Raised in a test's main thread by the per-test alarm."""


def _timed_out(signum, frame):
    raise TestTimedOut(f"the test ran longer than {_TEST_TIMEOUT} s (A2A_TEST_TIMEOUT)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    import faulthandler
    import signal
    previous = signal.signal(signal.SIGALRM, _timed_out)
    signal.alarm(_TEST_TIMEOUT)
    faulthandler.dump_traceback_later(_TEST_TIMEOUT + 60, exit=True)
    try:
        yield
    finally:
        signal.alarm(0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)


_postgres = []            # the session's PostgreSQL server, once a test asked for it


def postgres_server():
    """The PostgreSQL server of this test session (started on first use,
    stopped at exit), or a skip saying what is missing (a failure with
    A2A_REQUIRE_ALL=1)."""
    import atexit
    from postgres_server import PostgresServer, binaries
    need("psycopg", "the PostgreSQL store needs psycopg 3 (pip install -e '.[postgres]')")
    if binaries() is None:
        need("initdb", "PostgreSQL's server binaries are not here (apt-get install postgresql)")
    if not _postgres:
        _postgres.append(PostgresServer())
        atexit.register(_postgres[0].stop)
        # At exit, before it stops (atexit: last in, first out): the stores'
        # listeners would each say that they lost the database.
        atexit.register(logging.disable, logging.CRITICAL)
    return _postgres[0]


_schemas = itertools.count()


def postgres_store(**options):
    """A PostgresStore in a schema of its own (empty) on the session's server."""
    import a2a_postgres
    url = postgres_server().url
    return a2a_postgres.PostgresStore(url, schema=f"t{os.getpid()}_{next(_schemas)}", **options)


if os.environ.get("A2A_TEST_STORE") == "postgres":
    _made = []

    def _postgres_task_store(**limits):
        """A PostgresStore (a new schema) in place of the in-memory TaskStore
        (four connections at most, the suite makes hundreds of stores, and a
        request waits up to 30 s for one: on a loaded machine, the tests that
        send from eight threads at once are about losing no task). The
        stores made before the newest 32 give back their idle connections and
        their listener (close(): one still in use opens them again)."""
        _made.append(postgres_store(pool=4, pool_timeout=30.0, **limits))
        if len(_made) == 1:             # at exit, before the server stops (atexit: last in, first out)
            import atexit
            atexit.register(lambda: [(setattr(store, "listen", False), store.close())
                                     for store in _made])
        while len(_made) > 32:
            _made.pop(0).close()
        return _made[-1]
    a2a_min.TaskStore = _postgres_task_store

    @pytest.fixture(autouse=True)
    def _servers_of_past_tests_end():
        """After each test, the Servers nobody holds any more are collected,
        so their store watches end (each holds its Server weakly) and stop
        asking PostgreSQL: hundreds of idle watches would slow the database
        for the tests that follow."""
        yield
        import gc
        gc.collect()


@pytest.fixture
def server():
    return a2a_min.Server(scenario_agent, name="Test agent", description="For tests.")


@pytest.fixture(params=sorted(BINDINGS))
def binding(request):
    """Tests that take ``client`` or ``make_client`` run once per binding."""
    if request.param == "grpc" and not grpc_available():
        pytest.skip("gRPC binding: needs grpcio, protobuf and googleapis-common-protos "
                    "(pip install -e '.[grpc]')")
    if request.param == "via_asgi":
        need("uvicorn", "ASGI host: needs uvicorn (the test extra)")
    return request.param


@pytest.fixture
def clients():
    """The client class of each binding (a module may name others of its own:
    tests/test_catalog_operations.py's, through a mounted agent)."""
    return BINDINGS


@pytest.fixture
def make_client(binding, clients):
    made = []

    def make(server):
        client = clients[binding](server)
        made.append(client)
        return client
    yield make
    for client in made:
        if hasattr(client, "close"):
            client.close()


@pytest.fixture
def client(server, make_client):
    return make_client(server)


@pytest.fixture
def live(server):
    running = Live(server, timeout=3)
    yield running
    running.close()
