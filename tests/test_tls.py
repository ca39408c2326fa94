"""TLS and mutual TLS on the threaded and asyncio servers, with certificates
made here by a throw-away CA (the openssl command) and real TLS clients: the
standard library's, curl, and the reference SDK's."""

import asyncio
import http.client
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time

import pytest

from harness import ROOT, need, user_message
import a2a_min

HOSTS = ["threads", "asyncio"]
V1 = {"A2A-Version": "1.0", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA; a server certificate for 127.0.0.1; client certificates for alice
    and bob; one a stranger's CA issued; and a server certificate used as a
    client's (a certificate for the wrong purpose)."""
    need("openssl", "the TLS tests make a throw-away CA with the openssl command")
    d = tmp_path_factory.mktemp("pki")

    def run(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "stranger"):
        run("req", "-x509", *ec, "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2",
            "-subj", f"/CN={ca} CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def issue(name, subject, usage, ca="ca", san=None):
        run("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
        (d / f"{name}.ext").write_text(
            (f"subjectAltName={san}\n" if san else "") + f"extendedKeyUsage={usage}\n"
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")

    issue("server", "/CN=localhost", "serverAuth", san="DNS:localhost,IP:127.0.0.1")
    issue("alice", "/O=Example/CN=alice", "clientAuth")
    issue("bob", "/O=Example/CN=bob", "clientAuth")
    issue("mallory", "/O=Example/CN=mallory", "clientAuth", ca="stranger")
    return d


def server_tls(pki, **more):
    return {"cert": str(pki / "server.pem"), "key": str(pki / "server.key"), **more}


def client_context(pki, who=None):
    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    if who:
        context.load_cert_chain(str(pki / f"{who}.pem"), str(pki / f"{who}.key"))
    return context


class TlsHost:
    """``server`` on 127.0.0.1 over TLS, on the threaded or the asyncio server."""

    def __init__(self, server, kind, tls, handshake_timeout=10.0):
        self.kind = kind
        if kind == "threads":
            self.httpd = a2a_min.make_http_server(server, "127.0.0.1", 0, tls=tls,
                                                  handshake_timeout=handshake_timeout)
            self.port = self.httpd.server_address[1]
            threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()
            return
        self.loop, ready = asyncio.new_event_loop(), threading.Event()

        def on_ready(listener):
            self.port = listener.sockets[0].getsockname()[1]
            ready.set()

        async def run():
            self.task = asyncio.current_task()
            try:
                await a2a_min.serve_asyncio(server, "127.0.0.1", 0, on_ready=on_ready, tls=tls,
                                            handshake_timeout=handshake_timeout, grace=1.0)
            except asyncio.CancelledError:
                pass
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(run(),),
                                       daemon=True)
        self.thread.start()
        assert ready.wait(10)

    def connection(self, context, timeout=10):
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                           context=context)

    def call(self, context, method, path, body=None, headers=V1):
        conn = self.connection(context)
        try:
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            response = conn.getresponse()
            return response.status, response.read()
        finally:
            conn.close()

    def close(self):
        if self.kind == "threads":
            self.httpd.shutdown()
            self.httpd.server_close()
        else:
            self.loop.call_soon_threadsafe(self.task.cancel)
            self.thread.join(10)


@pytest.fixture(params=HOSTS)
def tls_host(request, pki):
    host = TlsHost(a2a_min.demo_server(), request.param, server_tls(pki))
    yield host
    host.close()


@pytest.fixture(params=HOSTS)
def mtls_host(request, pki):
    server = a2a_min.demo_server(authenticate=a2a_min.MutualTlsAuth())
    host = TlsHost(server, request.param, server_tls(pki, client_ca=str(pki / "ca.pem")))
    yield host
    host.close()


def send(host, context, text="hello", path="/message:send"):
    return host.call(context, "POST", path, {"message": user_message(text)})


# -- HTTPS ---------------------------------------------------------------------------

def test_https_serves_both_bindings_and_the_card_says_https(tls_host, pki):
    context = client_context(pki)
    status, body = tls_host.call(context, "GET", "/.well-known/agent-card.json", headers={})
    card = json.loads(body)
    assert status == 200
    assert {i["url"] for i in card["supportedInterfaces"]} == {
        f"https://127.0.0.1:{tls_host.port}/", f"https://127.0.0.1:{tls_host.port}"}
    status, body = send(tls_host, context)
    assert status == 200 and json.loads(body)["task"]["status"]["state"] == \
        "TASK_STATE_COMPLETED"
    status, body = tls_host.call(context, "POST", "/", {
        "jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}})
    assert json.loads(body)["result"]["totalSize"] == 1


def test_keep_alive_and_a_stream_over_tls(tls_host, pki):
    conn = tls_host.connection(client_context(pki))
    for i in range(3):                                 # one connection, one handshake
        conn.request("POST", "/message:send", json.dumps({"message": user_message(f"k{i}")}), V1)
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Connection") != "close"
        response.read()
    conn.request("POST", "/message:stream", json.dumps({"message": user_message("s")}), V1)
    response = conn.getresponse()
    frames = response.read().decode().split("\n\n")
    assert frames[0].startswith("id: 0\ndata: ") and "TASK_STATE_COMPLETED" in frames[-2]
    conn.close()


def test_curl_over_tls(tls_host, pki):
    need("curl", "the curl test needs curl")
    done = subprocess.run(
        ["curl", "-s", "--cacert", str(pki / "ca.pem"), f"https://127.0.0.1:{tls_host.port}/",
         "-H", "A2A-Version: 1.0", "-H", "Content-Type: application/json", "-d",
         json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                     "params": {"message": user_message("curl")}})],
        capture_output=True, text=True, timeout=30)
    assert json.loads(done.stdout)["result"]["task"]["status"]["state"] == \
        "TASK_STATE_COMPLETED", done


def test_an_untrusted_server_certificate_is_refused_by_the_client(tls_host):
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_host.call(ssl.create_default_context(), "GET", "/.well-known/agent-card.json")


def test_tls_1_1_is_refused(tls_host, pki):
    context = client_context(pki)
    try:
        context.minimum_version = context.maximum_version = ssl.TLSVersion.TLSv1_1
    except (ValueError, ssl.SSLError):
        pytest.skip("this OpenSSL cannot even offer TLS 1.1")
    with pytest.raises((ssl.SSLError, ConnectionError)):
        tls_host.call(context, "GET", "/.well-known/agent-card.json")


def test_tls_1_3_is_preferred(tls_host, pki):
    with socket.create_connection(("127.0.0.1", tls_host.port), timeout=10) as raw:
        with client_context(pki).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            assert tls.version() == "TLSv1.3"


# -- mutual TLS -------------------------------------------------------------------------

def test_mutual_tls_scopes_tasks_per_certificate_and_leaves_the_card_public(mtls_host, pki):
    anonymous = client_context(pki)
    status, body = mtls_host.call(anonymous, "GET", "/.well-known/agent-card.json", headers={})
    card = json.loads(body)
    assert status == 200
    assert card["securitySchemes"] == {"mtls": {"mtlsSecurityScheme": {
        "description": "a client certificate issued by the CA this agent trusts"}}}
    assert card["securityRequirements"] == [{"schemes": {"mtls": {"list": []}}}]
    status, body = send(mtls_host, anonymous)
    error = json.loads(body)["error"]
    assert status == 401 and "client certificate" in error["message"]
    alice, bob = client_context(pki, "alice"), client_context(pki, "bob")
    status, body = send(mtls_host, alice, "mine")
    task_id = json.loads(body)["task"]["id"]
    assert status == 200
    assert mtls_host.call(alice, "GET", f"/tasks/{task_id}")[0] == 200
    assert mtls_host.call(bob, "GET", f"/tasks/{task_id}")[0] == 404     # (another's task)
    assert json.loads(mtls_host.call(bob, "GET", "/tasks")[1])["totalSize"] == 0
    assert json.loads(mtls_host.call(alice, "GET", "/tasks")[1])["totalSize"] == 1


def test_the_principal_is_the_subject_or_what_the_hook_says(pki):
    seen = []

    def agent(ctx):
        seen.append((ctx.caller.principal, ctx.caller.certificate["subject"]))
        return "ok"
    for auth, expected in ((a2a_min.MutualTlsAuth(), "CN=alice,O=Example"),
                           (a2a_min.MutualTlsAuth(principal_of=lambda c: "serial:" + c[
                               "serialNumber"]), None)):
        host = TlsHost(a2a_min.Server(agent, authenticate=auth), "threads",
                       server_tls(pki, client_ca=str(pki / "ca.pem")))
        try:
            assert send(host, client_context(pki, "alice"))[0] == 200
        finally:
            host.close()
        principal, subject = seen.pop()
        assert principal == expected or expected is None and principal.startswith("serial:")
        assert dict(rdn[0] for rdn in subject)["commonName"] == "alice"


@pytest.mark.parametrize("kind", HOSTS)
@pytest.mark.parametrize("who", ["mallory", "server"])      # a stranger's CA; the wrong purpose
def test_a_client_certificate_that_does_not_verify_ends_the_handshake(pki, kind, who):
    host = TlsHost(a2a_min.demo_server(authenticate=a2a_min.MutualTlsAuth()), kind,
                   server_tls(pki, client_ca=str(pki / "ca.pem")))
    try:
        context = client_context(pki)
        context.load_cert_chain(str(pki / f"{who}.pem"), str(pki / f"{who}.key"))
        with pytest.raises((ssl.SSLError, ConnectionError)):
            send(host, context)
        assert send(host, client_context(pki, "alice"))[0] == 200      # the next one is served
    finally:
        host.close()


@pytest.mark.parametrize("kind", HOSTS)
def test_required_client_certificates_refuse_the_handshake_without_one(pki, kind):
    host = TlsHost(a2a_min.demo_server(), kind,
                   server_tls(pki, client_ca=str(pki / "ca.pem"), client_cert="required"))
    try:
        with pytest.raises((ssl.SSLError, ConnectionError)):
            host.call(client_context(pki), "GET", "/.well-known/agent-card.json", headers={})
        status, _ = host.call(client_context(pki, "bob"), "GET", "/.well-known/agent-card.json",
                              headers={})
        assert status == 200
    finally:
        host.close()


# -- what must not hang ----------------------------------------------------------------

@pytest.mark.parametrize("kind", HOSTS)
def test_stalled_handshakes_are_cut_off_and_delay_nobody(pki, kind):
    host = TlsHost(a2a_min.demo_server(), kind, server_tls(pki), handshake_timeout=1.0)
    try:
        silent = [socket.create_connection(("127.0.0.1", host.port)) for _ in range(20)]
        partial = [socket.create_connection(("127.0.0.1", host.port)) for _ in range(20)]
        for sock in partial:                             # a TLS record header, then nothing
            sock.sendall(b"\x16\x03\x01\x02\x00\x01")
        started = time.monotonic()
        assert send(host, client_context(pki))[0] == 200
        assert time.monotonic() - started < 0.9          # not behind the stalled ones
        for sock in silent + partial:                    # each is closed at its deadline
            sock.settimeout(5)
            assert sock.recv(100) == b""
            sock.close()
        assert time.monotonic() - started < 4
    finally:
        host.close()


@pytest.mark.parametrize("kind", HOSTS)
def test_plain_http_on_a_tls_port_is_told_or_closed_never_left_waiting(pki, kind):
    host = TlsHost(a2a_min.demo_server(), kind, server_tls(pki), handshake_timeout=2.0)
    try:
        started = time.monotonic()
        with socket.create_connection(("127.0.0.1", host.port), timeout=5) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            data = b""
            while chunk := sock.recv(4096):
                data += chunk
        if kind == "threads":                        # it can look before the handshake
            assert data.startswith(b"HTTP/1.1 400 Bad Request") and b"use https://" in data
        else:                                        # asyncio's SSL protocol cannot: a close
            assert data == b""
        assert time.monotonic() - started < 1.5      # at once, not at the handshake deadline
    finally:
        host.close()


def test_a_tls_client_on_a_plain_port_fails_at_once():
    httpd = a2a_min.make_http_server(a2a_min.demo_server(), "127.0.0.1", 0, timeout=5)
    threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
    try:
        started = time.monotonic()
        conn = http.client.HTTPSConnection("127.0.0.1", httpd.server_address[1], timeout=10,
                                           context=ssl.create_default_context())
        with pytest.raises((ssl.SSLError, ConnectionError)):
            conn.request("GET", "/")
        assert time.monotonic() - started < 5
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- start-up errors name the file -----------------------------------------------------

@pytest.mark.parametrize("flags, says", [
    (["--tls-cert", "/nonexistent/server.pem"], "/nonexistent/server.pem cannot be used: no such file"),
    (["--tls-cert", "{pki}/server.pem", "--tls-key", "{pki}/alice.key"], "cannot be used"),
    (["--tls-cert", "{pki}/server.pem", "--tls-key", "{pki}/server.key",
      "--tls-client-ca", "{pki}/nope.pem"], "the client CA file {pki}/nope.pem cannot be used"),
    (["--tls-key", "{pki}/server.key"], "--tls-key needs --tls-cert"),
    (["--tls-cert", "{pki}/server.pem"], "is its private key in that file?"),
])
def test_a_certificate_that_cannot_be_used_stops_the_start_naming_the_file(pki, flags, says):
    flags = [f.replace("{pki}", str(pki)) for f in flags]
    done = subprocess.run([sys.executable, "a2a_min.py", "--port", "0", *flags], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and says.replace("{pki}", str(pki)) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") <= (
        1 if "need" not in says else 99)                  # (a file's problem: one line)


def test_an_unreadable_key_file_is_named(pki, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop root reading")
    key = tmp_path / "locked.key"
    shutil.copy(pki / "server.key", key)
    key.chmod(0)
    with pytest.raises(ValueError, match="permission denied"):
        a2a_min.make_http_server(a2a_min.demo_server(), "127.0.0.1", 0,
                                 tls={"cert": str(pki / "server.pem"), "key": str(key)})


# -- the demo with TLS, and the reference SDK's client ---------------------------------

@pytest.mark.parametrize("kind", HOSTS)
def test_the_reference_sdk_client_over_mutual_tls(pki, kind):
    from harness import require_sdk
    require_sdk()
    server = a2a_min.demo_server(authenticate=a2a_min.MutualTlsAuth())
    host = TlsHost(server, kind, server_tls(pki, client_ca=str(pki / "ca.pem")))
    try:
        for binding in ("JSONRPC", "HTTP+JSON"):
            done = subprocess.run(
                [sys.executable, f"{ROOT}/tests/sdk_client.py", f"https://127.0.0.1:{host.port}",
                 binding], capture_output=True, text=True, timeout=120,
                env={**os.environ, "A2A_TLS_CA": str(pki / "ca.pem"),
                     "A2A_TLS_CERT": str(pki / "alice.pem"), "A2A_TLS_KEY": str(pki / "alice.key")})
            assert done.returncode == 0, done.stderr[-3000:]
            seen = json.loads(done.stdout)
            assert seen["send"]["status"]["state"] == "TASK_STATE_COMPLETED"
            assert seen["stream"][-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
            assert seen["cancel"]["status"]["state"] == "TASK_STATE_CANCELED"
    finally:
        host.close()


# -- the client side -------------------------------------------------------------------

def test_the_client_over_mutual_tls(mtls_host, pki):
    import a2a_client, a2a_check, a2a_cli
    url = f"https://127.0.0.1:{mtls_host.port}"
    tls = a2a_client.tls_context(str(pki / "ca.pem"), str(pki / "alice.pem"),
                                 str(pki / "alice.key"))
    for binding in ("JSONRPC", "HTTP+JSON"):
        client = a2a_client.Client(url, binding=binding, tls=tls)
        task = client.send("hello")["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        with client.stream("streamed") as stream:
            events = list(stream)
        assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        client.close()
    bob = a2a_client.Client(url, tls=a2a_client.tls_context(
        str(pki / "ca.pem"), str(pki / "bob.pem"), str(pki / "bob.key")))
    with pytest.raises(a2a_min.TaskNotFoundError):
        bob.get_task(task["id"])
    insecure = a2a_client.Client(url, tls=a2a_client.tls_context(insecure=True))
    with pytest.raises(a2a_min.AuthenticationRequiredError):
        insecure.send("no certificate")


def test_the_command_line_over_mutual_tls_and_its_curl_lines(mtls_host, pki):
    import io
    import a2a_client, a2a_check, a2a_cli
    url = f"https://127.0.0.1:{mtls_host.port}"
    flags = ["--cacert", str(pki / "ca.pem"), "--cert", str(pki / "alice.pem"),
             "--key", str(pki / "alice.key")]
    out, err = io.StringIO(), io.StringIO()
    assert a2a_cli.verbs_main(["send", url, "hi", "--curl", *flags], out, err) == 0
    assert "COMPLETED" in out.getvalue()
    curl_lines = err.getvalue().splitlines()
    assert curl_lines and all(line.startswith("curl -sS " + " ".join(flags) + " https://")
                              for line in curl_lines)
    need("curl", "running the printed curl line needs curl")
    done = subprocess.run(["bash", "-c", curl_lines[-1]], capture_output=True, text=True,
                          timeout=30)
    assert json.loads(done.stdout)["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for args, says in ((["card", url], "cannot be trusted"),
                       (["card", url, "--cacert", "/nope.pem"], "/nope.pem"),
                       (["send", url, "x", "-k"], "client certificate")):
        out, err = io.StringIO(), io.StringIO()
        assert a2a_cli.verbs_main(args, out, err) == 1
        assert says in err.getvalue() and err.getvalue().count("\n") == 1, err.getvalue()


def test_check_over_mutual_tls_with_and_without_a_client_certificate(pki):
    """check URL --cacert: the card is public, the rest needs a certificate:
    one line saying so, SKIPs, no FAIL. With --cert and --key it checks
    everything, and a FAIL's curl line carries the three files."""
    import io
    import a2a_client, a2a_check, a2a_cli
    server = a2a_min.demo_server(authenticate=a2a_min.MutualTlsAuth(), push_notifications=True)
    server.store.put_config = lambda task_id, config, limit: None     # (a config forgotten)
    host = TlsHost(server, "threads", server_tls(pki, client_ca=str(pki / "ca.pem")))
    url = f"https://127.0.0.1:{host.port}"
    files = ["--cacert", str(pki / "ca.pem"), "--cert", str(pki / "alice.pem"),
             "--key", str(pki / "alice.key")]
    try:
        out, err = io.StringIO(), io.StringIO()
        status = a2a_cli.verbs_main(["check", url, *files[:2]], out, err)
        without = out.getvalue()
        out = io.StringIO()
        with_cert = a2a_cli.verbs_main(["check", url, *files], out, err), out.getvalue()
        reproduce = [line for line in with_cert[1].splitlines() if "reproduce:" in line]
        need("curl", "running the printed curl line needs curl")
        done = subprocess.run(["bash", "-c", reproduce[-1].split("reproduce: ", 1)[1]],
                              capture_output=True, text=True, timeout=30)
    finally:
        host.close()
    assert status == 0 and "FAIL" not in without, without
    assert [line for line in without.splitlines() if line.startswith("this agent needs")] == [
        "this agent needs credentials: a client certificate (mtls): --cert FILE --key FILE "
        "(what needs them is skipped)"], without
    assert with_cert[0] == 1, with_cert[1]
    assert reproduce and all(("curl -sS " + " ".join(files) + " https://") in line
                             for line in reproduce), with_cert[1]
    assert done.returncode == 0 and "UNAUTHENTICATED" not in done.stdout, done


# -- gRPC over TLS ---------------------------------------------------------------------

@pytest.fixture
def grpc_mtls(pki):
    """One Server on HTTPS (threaded) and on gRPC over TLS, mutual TLS on both."""
    need("grpc", "the gRPC tests need the grpc extra (grpcio)")
    import a2a_grpc
    server = a2a_min.demo_server(authenticate=a2a_min.MutualTlsAuth())
    tls = server_tls(pki, client_ca=str(pki / "ca.pem"))
    host = TlsHost(server, "threads", tls)
    grpc_server, port = a2a_grpc.create_server(server, "127.0.0.1:0", tls=tls)
    grpc_server.start()
    host.grpc_port = port
    yield host
    grpc_server.stop(0)
    host.close()


def test_grpc_over_mutual_tls_shares_tasks_with_https_per_certificate(grpc_mtls, pki):
    import a2a_client, a2a_check, a2a_cli
    import a2a_grpc
    url = f"https://127.0.0.1:{grpc_mtls.port}"

    def client(who, binding):
        return a2a_client.Client(url, binding=binding, tls=a2a_client.tls_context(
            str(pki / "ca.pem"), str(pki / f"{who}.pem"), str(pki / f"{who}.key")))
    card_grpc = [i for i in client("alice", "GRPC").card["supportedInterfaces"]
                 if i["protocolBinding"] == "GRPC"]
    assert card_grpc[0]["url"] == f"127.0.0.1:{grpc_mtls.grpc_port}"     # a gRPC target
    task = client("alice", "GRPC").send("over grpc")["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert client("alice", "HTTP+JSON").get_task(task["id"])["id"] == task["id"]
    with pytest.raises(a2a_min.TaskNotFoundError):
        client("bob", "GRPC").get_task(task["id"])
    # Without a client certificate the gRPC port refuses the handshake.
    errors = {"client_error": a2a_client.ClientError, "error_from": a2a_client.error_from}
    bare = a2a_grpc.GrpcChannel(f"127.0.0.1:{grpc_mtls.grpc_port}",
                                tls=a2a_client.tls_context(str(pki / "ca.pem")), **errors)
    with pytest.raises(a2a_client.ClientError):
        bare.call("ListTasks", {}, {"a2a-version": "1.0"})
    bare.close()
    # ... and a plaintext channel gets nowhere.
    plain = a2a_grpc.GrpcChannel(f"http://127.0.0.1:{grpc_mtls.grpc_port}", **errors)
    with pytest.raises(a2a_client.ClientError):
        plain.call("ListTasks", {}, {"a2a-version": "1.0"})
    plain.close()


def test_the_reference_sdk_grpc_client_over_mutual_tls(grpc_mtls, pki):
    from harness import require_sdk
    require_sdk()
    done = subprocess.run(
        [sys.executable, f"{ROOT}/tests/sdk_client.py", f"https://127.0.0.1:{grpc_mtls.port}",
         "GRPC"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "A2A_TLS_CA": str(pki / "ca.pem"),
             "A2A_TLS_CERT": str(pki / "alice.pem"), "A2A_TLS_KEY": str(pki / "alice.key")})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["send"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert seen["cancel"]["status"]["state"] == "TASK_STATE_CANCELED"


def test_a2a_grpc_names_a_certificate_it_cannot_read(pki):
    need("grpc", "the gRPC tests need the grpc extra (grpcio)")
    done = subprocess.run([sys.executable, "a2a_grpc.py", "--port", "0", "--grpc-port", "0",
                           "--tls-cert", str(pki / "missing.pem")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "missing.pem cannot be used: no such file" in done.stderr


def test_sighup_reloads_a_renewed_certificate(pki, tmp_path):
    """The demo with --tls-cert: replace the files, kill -HUP, and the next
    handshake presents the new certificate (no restart)."""
    for name in ("server.pem", "server.key"):
        shutil.copy(pki / name, tmp_path / name)
    port = _free_port()
    demo = subprocess.Popen([sys.executable, "a2a_min.py", "--port", str(port), "--tls-cert",
                             str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server.key")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "https://" in demo.stdout.readline()

        def serial():
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                with client_context(pki).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                    return ssl.DER_cert_to_PEM_cert(tls.getpeercert(True))
        first = serial()
        subprocess.run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "new.key", "-out",
                        "new.csr", "-subj", "/CN=localhost"], cwd=tmp_path, check=True,
                       capture_output=True)
        subprocess.run(["openssl", "x509", "-req", "-in", "new.csr", "-CA", str(pki / "ca.pem"),
                        "-CAkey", str(pki / "ca.key"), "-CAcreateserial", "-out", "new.pem",
                        "-days", "2", "-extfile", str(pki / "server.ext")], cwd=tmp_path,
                       check=True, capture_output=True)
        os.replace(tmp_path / "new.key", tmp_path / "server.key")
        os.replace(tmp_path / "new.pem", tmp_path / "server.pem")
        assert serial() == first                          # not before the signal
        demo.send_signal(__import__("signal").SIGHUP)
        deadline = time.monotonic() + 10
        while serial() == first and time.monotonic() < deadline:
            time.sleep(0.1)
        assert serial() != first
    finally:
        demo.terminate()
        demo.wait(10)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("kind", HOSTS)
def test_a_renegotiation_attempt_is_refused_and_holds_nothing(pki, kind):
    """TLS 1.2's renegotiation (TLS 1.3 has none): openssl s_client's "R"."""
    need("openssl", "the renegotiation test drives openssl s_client")
    host = TlsHost(a2a_min.demo_server(), kind, server_tls(pki), handshake_timeout=2.0)
    try:
        started = time.monotonic()
        done = subprocess.run(
            ["openssl", "s_client", "-tls1_2", "-connect", f"127.0.0.1:{host.port}",
             "-CAfile", str(pki / "ca.pem")], input="R\n", capture_output=True, text=True,
            timeout=30)
        assert time.monotonic() - started < 20
        said = done.stdout + done.stderr
        assert "RENEGOTIATING" in said and "no renegotiation" in said, said[-500:]
        assert "Verify return code: 0 (ok)" in done.stdout           # (the handshake was fine)
        assert send(host, client_context(pki))[0] == 200             # and nobody waits
    finally:
        host.close()


def test_a_handshake_and_an_exec_program_past_descriptor_1023(pki):
    """A busy server holds more than 1024 descriptors; select.select() cannot
    wait on those (ValueError), so every handshake failed once a full suite had
    opened enough of them. The handshake and serve --exec wait with selectors."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the descriptor limit here ({hard}) is too low to pass 1023")
    code = f"""
import http.client, resource, socket, ssl, sys, threading
sys.path.insert(0, {ROOT!r})
resource.setrlimit(resource.RLIMIT_NOFILE, (2048, {hard if hard != resource.RLIM_INFINITY else 2048}))
held = [socket.socket() for _ in range(1100)]
import a2a_min, a2a_cli
httpd = a2a_min.make_http_server(a2a_min.demo_server(), "127.0.0.1", 0,
                                 tls={{"cert": {str(pki / "server.pem")!r}, "key": {str(pki / "server.key")!r}}})
threading.Thread(target=httpd.serve_forever, daemon=True).start()
conn = http.client.HTTPSConnection("127.0.0.1", httpd.server_address[1], timeout=10,
                                   context=ssl.create_default_context(cafile={str(pki / "ca.pem")!r}))
conn.request("GET", "/.well-known/agent-card.json")
print(conn.getresponse().status)
server = a2a_min.Server(a2a_cli.exec_agent(["echo", "hi"]))
task = server.call("SendMessage", {{"message": {{"messageId": "m", "role": "ROLE_USER", "parts": [{{"text": "x"}}]}}}})["task"]
print(task["status"]["state"], task["artifacts"][0]["parts"][0]["text"].strip())
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["200", "TASK_STATE_COMPLETED", "hi"], done.stderr[-2000:]


# -- whose tasks a certificate reads: one principal per certificate, on every binding ---------

@pytest.fixture(scope="module")
def lookalikes(pki):
    """Certificates from the CA of ``pki`` whose subjects written naively look
    like another's: a CN holding "," (alice is /O=Example/CN=alice), a CN
    holding "+" and the multi-valued RDN it imitates (CN=alice+O=Example); and
    certificates with an empty subject (SAN only)."""
    def run(*args):
        subprocess.run(["openssl", *args], cwd=pki, check=True, capture_output=True, timeout=60)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    made = {"comma": ("/CN=alice,O=Example", None), "plus": ("/CN=alice\\+O=Example", None),
            "multi": ("/CN=alice+O=Example", None),
            "spiffe_a": ("/", "URI:spiffe://example.org/a,DNS:a.example"),
            "spiffe_b": ("/", "DNS:b1.example,URI:spiffe://example.org/b"),
            "dns_only": ("/", "DNS:c.example"), "nobody": ("/", None)}
    for name, (subject, san) in made.items():
        run("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject,
            *(["-multivalue-rdn"] if name == "multi" else []))
        (pki / f"{name}.ext").write_text(
            (f"subjectAltName=critical,{san}\n" if san else "") + "extendedKeyUsage=clientAuth\n"
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")
    return pki


@pytest.fixture(scope="module")
def three_bindings(lookalikes):
    """One Server whose agent answers with its caller's principal, on HTTPS
    (threaded and asyncio hosts) and on gRPC over TLS, mutual TLS on all."""
    need("grpc", "the gRPC tests need the grpc extra (grpcio)")
    import a2a_grpc
    server = a2a_min.Server(lambda ctx: "principal=" + ctx.caller.principal,
                            authenticate=a2a_min.MutualTlsAuth())
    tls = server_tls(lookalikes, client_ca=str(lookalikes / "ca.pem"))
    hosts = [TlsHost(server, kind, tls) for kind in HOSTS]
    grpc_server, _ = a2a_grpc.create_server(server, "127.0.0.1:0", tls=tls)
    grpc_server.start()
    yield hosts
    grpc_server.stop(0)
    for host in hosts:
        host.close()


def mtls_client(pki, host, who, binding):
    import a2a_client, a2a_check, a2a_cli
    tls = a2a_client.tls_context(str(pki / "ca.pem"), str(pki / f"{who}.pem"),
                                 str(pki / f"{who}.key"))
    return a2a_client.Client(f"https://127.0.0.1:{host.port}", binding=binding, tls=tls)


def principal_seen(pki, host, who, binding):
    task = mtls_client(pki, host, who, binding).send("who am I?")["task"]
    text = task["artifacts"][0]["parts"][0]["text"]
    assert text.startswith("principal="), task
    return task["id"], text.removeprefix("principal=")


EXPECTED_PRINCIPALS = {
    "alice": "CN=alice,O=Example", "comma": "CN=alice\\,O=Example",
    "plus": "CN=alice\\+O=Example", "multi": "CN=alice+O=Example",
    "spiffe_a": "URI:spiffe://example.org/a", "spiffe_b": "URI:spiffe://example.org/b",
    "dns_only": "DNS:c.example"}


@pytest.mark.parametrize("binding", ["HTTP+JSON", "JSONRPC", "GRPC"])
def test_one_certificate_is_one_principal_on_every_binding_and_lookalikes_differ(
        lookalikes, three_bindings, binding):
    for host in three_bindings:
        alice_task, _ = principal_seen(lookalikes, host, "alice", binding)
        for who, expected in EXPECTED_PRINCIPALS.items():
            task_id, principal = principal_seen(lookalikes, host, who, binding)
            assert principal == expected, (host.kind, binding, who)
            if who != "alice":                      # a lookalike cannot read alice's task
                with pytest.raises(a2a_min.TaskNotFoundError):
                    mtls_client(lookalikes, host, who, binding).get_task(alice_task)
                # ... nor alice the lookalike's
                with pytest.raises(a2a_min.TaskNotFoundError):
                    mtls_client(lookalikes, host, "alice", binding).get_task(task_id)


@pytest.mark.parametrize("binding", ["HTTP+JSON", "GRPC"])
def test_a_certificate_that_names_nobody_is_refused(lookalikes, three_bindings, binding):
    for host in three_bindings:
        with pytest.raises(a2a_min.AuthenticationRequiredError, match="names nobody"):
            mtls_client(lookalikes, host, "nobody", binding).send("who am I?")


def test_the_principal_hook_gets_the_same_certificate_on_every_binding(lookalikes):
    need("grpc", "the gRPC tests need the grpc extra (grpcio)")
    import a2a_grpc
    seen = []

    def principal(certificate):
        seen.append(certificate)
        return "serial:" + certificate["serialNumber"]
    server = a2a_min.Server(lambda ctx: "principal=" + ctx.caller.principal,
                            authenticate=a2a_min.MutualTlsAuth(principal=principal))
    tls = server_tls(lookalikes, client_ca=str(lookalikes / "ca.pem"))
    host = TlsHost(server, "threads", tls)
    grpc_server, _ = a2a_grpc.create_server(server, "127.0.0.1:0", tls=tls)
    grpc_server.start()
    try:
        over_http = principal_seen(lookalikes, host, "spiffe_b", "HTTP+JSON")[1]
        over_grpc = principal_seen(lookalikes, host, "spiffe_b", "GRPC")[1]
    finally:
        grpc_server.stop(0)
        host.close()
    assert over_http == over_grpc and over_http.startswith("serial:")
    assert seen[0] == seen[-1] and seen[0]["subjectAltName"] == (
        ("DNS", "b1.example"), ("URI", "spiffe://example.org/b"))
