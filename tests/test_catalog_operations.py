"""The operations suite (tests/test_operations.py), every test of it, run
against an agent mounted at a tenant of another server (Server.mount) as if
it were alone: over JSON-RPC (the tenant in the params), HTTP+JSON (the
/{tenant} prefix) and gRPC (the tenant field), each request naming the tenant
the way its binding does; on every host (threads, asyncio, WSGI, ASGI,
Lambda) too. The front server's own agent answers otherwise, so
a request that lost its way shows. ``client.server`` stays the mounted agent,
whose state the tests read."""

import json

import pytest

import a2a_min
from harness import BINDINGS, V1, Client, RestClient, grpc_available, need
from test_operations import *  # noqa: F401,F403  (the tests themselves, collected here again)

TENANT = "mounted"


def _front(server):
    front = a2a_min.Server(lambda text: "the front answered, not the mounted agent",
                           name="Front")
    front.mount(TENANT, server)
    return front


def _with_tenant(params):
    if isinstance(params, dict) and "tenant" not in params:
        return {**params, "tenant": TENANT}
    return params


def mounted(cls):
    """``cls`` (a client of harness.BINDINGS) talking to a front server on
    which the agent under test is mounted, each request naming its tenant."""

    class Mounted(cls):
        def __init__(self, server):
            self.front = _front(server)
            super().__init__(self.front)       # (a host, a gRPC server: built on the front)
            self.server = server

        # The in-process clients send with self.server, the agent: these send
        # through the front (the hosts and gRPC were built on it).
        if cls is Client:
            def raw(self, body, headers=V1, query=""):
                if not isinstance(body, bytes):
                    body = json.dumps(body).encode()
                return self.front.handle_http("POST", "/", query, dict(headers), body)

        if cls is RestClient:
            def _send(self, method, params, headers, query):
                verb, path, query, body = self.request_for(method, params, query)
                return self.front.handle_http(verb, path, query, dict(headers), body)

        def call(self, method, params=None, *args, **kw):
            return super().call(method, _with_tenant(params or {}), *args, **kw)

        def stream(self, method, params, *args, **kw):
            return super().stream(method, _with_tenant(params), *args, **kw)

    Mounted.__name__ = "Mounted" + cls.__name__
    return Mounted


# (Not again over TLS: what a host's TLS does is not what mounting does, and CI's time is short.)
MOUNTED = {"mounted_" + name: mounted(cls) for name, cls in BINDINGS.items()
           if not name.endswith("_tls")}


@pytest.fixture(params=sorted(MOUNTED))
def binding(request):
    if request.param == "mounted_grpc" and not grpc_available():
        pytest.skip("gRPC binding: needs grpcio, protobuf and googleapis-common-protos")
    if request.param == "mounted_via_asgi":
        need("uvicorn", "ASGI host: needs uvicorn (the test extra)")
    return request.param


@pytest.fixture
def clients():
    return MOUNTED
