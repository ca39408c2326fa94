"""The operations suite (tests/test_operations.py), every test of it, run
against an agent mounted at a tenant of another server (Server.mount) as if
it were alone: over JSON-RPC (the tenant in the params), HTTP+JSON (the
/{tenant} prefix) and gRPC (the tenant field), each request naming the tenant
the way its binding does. The front server's own agent answers otherwise, so
a request that lost its way shows. ``client.server`` stays the mounted agent,
whose state the tests read."""

import pytest

import a2a_min
from harness import V1, Client, GrpcClient, RestClient, grpc_available
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


class MountedJsonRpc(Client):
    def __init__(self, server):
        super().__init__(server)
        self.front = _front(server)

    def raw(self, body, headers=V1, query=""):
        if isinstance(body, dict) and isinstance(body.get("params"), dict):
            body = {**body, "params": _with_tenant(body["params"])}
        elif isinstance(body, list):
            body = [{**b, "params": _with_tenant(b["params"])} if isinstance(b, dict) and
                    isinstance(b.get("params"), dict) else b for b in body]
        if not isinstance(body, bytes):
            import json
            body = json.dumps(body).encode()
        return self.front.handle_http("POST", "/", query, dict(headers), body)


class MountedRest(RestClient):
    def __init__(self, server):
        super().__init__(server)
        self.front = _front(server)

    def _send(self, method, params, headers, query):
        verb, path, query, body = self.request_for(method, _with_tenant(params or {}), query)
        return self.front.handle_http(verb, path, query, dict(headers), body)


class MountedGrpc(GrpcClient):
    def __init__(self, server):
        front = _front(server)
        super().__init__(front)
        self.server = server

    def _rpc(self, method, params, headers):
        return super()._rpc(method, _with_tenant(params or {}), headers)


MOUNTED = {"mounted_jsonrpc": MountedJsonRpc, "mounted_http+json": MountedRest,
           "mounted_grpc": MountedGrpc}


@pytest.fixture(params=sorted(MOUNTED))
def binding(request):
    if request.param == "mounted_grpc" and not grpc_available():
        pytest.skip("gRPC binding: needs grpcio, protobuf and googleapis-common-protos")
    return request.param


@pytest.fixture
def make_client(binding):
    made = []

    def make(server):
        client = MOUNTED[binding](server)
        made.append(client)
        return client
    yield make
    for client in made:
        if hasattr(client, "close"):
            client.close()
