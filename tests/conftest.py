"""Shared fixtures: servers in-process and on real loopback sockets. The clients
and helpers behind them are in harness.py."""

import pytest

pytest.register_assert_rewrite("harness")   # its asserts explain themselves, as here

import a2a_min  # noqa: E402  (harness puts the repository on sys.path)
from harness import BINDINGS, Live, grpc_available, need, scenario_agent  # noqa: E402


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
def make_client(binding):
    made = []

    def make(server):
        client = BINDINGS[binding](server)
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
