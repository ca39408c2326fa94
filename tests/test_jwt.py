"""a2a_jwt.JwtAuth: bearer tokens from an identity provider, against a real
issuer the tests start (an HTTPS OpenID Connect discovery document and JWKS
on 127.0.0.1, certified by the suite's throw-away CA), with keys the tests
make (RSA, EC P-256, Ed25519) and tokens signed here by hand with
``cryptography`` (not with PyJWT, the library under test). The attack set:
``alg: none``, HS256 keyed with the public key, a ``kid`` naming another key,
``jku``/``x5u``/``jwk`` headers (a listener that fails the test if anyone
connects), expired, not yet valid, wrong audience and issuer, a huge token,
and a flood of unknown kids (the JWKS fetches counted). Valid tokens work on
every binding, and callers never see each other's tasks."""

import base64
import hashlib
import hmac
import http.server
import json
import socket
import ssl
import threading
import time

import pytest

import a2a_min
import harness
from harness import V1, need, scenario_agent, suite_pki, user_message

need("jwt", "JwtAuth needs PyJWT (pip install 'PyJWT[crypto]', the jwt extra)")
need("cryptography", "the tests sign their tokens with cryptography")

import a2a_jwt  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils  # noqa: E402

AUDIENCE = "https://agent.test"
# (harness reads the error classes when it is imported, before a2a_jwt adds its own)
harness.ERROR_CODES.setdefault(a2a_jwt.InsufficientScopeError.reason,
                               a2a_jwt.InsufficientScopeError.code)


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(n):
    return b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


class Key:
    """A key pair of the tests, its JWK, and a compact JWS signed by hand."""

    def __init__(self, kind, kid):
        self.kind, self.kid = kind, kid
        if kind in ("RS256", "PS256"):
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            numbers = self.private.public_key().public_numbers()
            self.jwk = {"kty": "RSA", "n": uint(numbers.n), "e": uint(numbers.e)}
        elif kind == "ES256":
            self.private = ec.generate_private_key(ec.SECP256R1())
            numbers = self.private.public_key().public_numbers()
            self.jwk = {"kty": "EC", "crv": "P-256", "x": b64(numbers.x.to_bytes(32, "big")),
                        "y": b64(numbers.y.to_bytes(32, "big"))}
        else:
            self.private = ed25519.Ed25519PrivateKey.generate()
            raw = self.private.public_key().public_bytes(serialization.Encoding.Raw,
                                                         serialization.PublicFormat.Raw)
            self.jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64(raw)}
        self.jwk = {**self.jwk, "kid": kid, "use": "sig"}
        self.pem = self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def sign(self, data, alg=None):
        alg = alg or self.kind
        if alg == "RS256":
            return self.private.sign(data, padding.PKCS1v15(), hashes.SHA256())
        if alg == "PS256":
            return self.private.sign(data, padding.PSS(mgf=padding.MGF1(hashes.SHA256()),
                                                       salt_length=32), hashes.SHA256())
        if alg == "ES256":
            r, s = utils.decode_dss_signature(self.private.sign(data, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return self.private.sign(data)

    def token(self, issuer, alg=None, header=None, **claims):
        now = int(time.time())
        body = {"iss": issuer, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300,
                **claims}
        head = {"alg": alg or self.kind, "typ": "JWT", "kid": self.kid, **(header or {})}
        head = {k: v for k, v in head.items() if v is not None}
        body = {k: v for k, v in body.items() if v is not None}
        signing_input = (b64(json.dumps(head).encode()) + "." +
                         b64(json.dumps(body).encode())).encode()
        return signing_input.decode() + "." + b64(self.sign(signing_input, alg))


class Issuer:
    """An identity provider on 127.0.0.1 over HTTPS: its discovery document
    and JWKS (with Cache-Control), counting the JWKS fetches; ``down`` makes
    it answer 503."""

    def __init__(self, keys, max_age=300):
        pki = suite_pki()
        self.keys, self.max_age, self.down, self.fetches = list(keys), max_age, False, 0
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if issuer.down:
                    return self.answer(503, {})
                if self.path == "/.well-known/openid-configuration":
                    return self.answer(200, {"issuer": issuer.url,
                                             "jwks_uri": issuer.url + "/jwks"})
                if self.path == "/jwks":
                    issuer.fetches += 1
                    return self.answer(200, {"keys": [k.jwk for k in issuer.keys]})
                self.answer(404, {})

            def answer(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Cache-Control", f"public, max-age={issuer.max_age}")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki["cert"], pki["key"])
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.httpd.server_address[1]}"
        self.client_context = ssl.create_default_context(cafile=pki["ca"])
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def auth(self, **options):
        return a2a_jwt.JwtAuth(issuer=self.url, audience=AUDIENCE,
                               tls_context=self.client_context, **options)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Tripwire:
    """A listener on 127.0.0.1 that records every connection: nothing may reach it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.url = f"https://127.0.0.1:{self.sock.getsockname()[1]}/keys"
        self.contacted, self.running = 0, True
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.contacted += 1
            conn.close()

    def close(self):
        self.running = False
        time.sleep(0.25)
        self.sock.close()


KEYS = {kind: Key(kind, f"{kind.lower()}-1") for kind in ("RS256", "PS256", "ES256", "EdDSA")}


@pytest.fixture(scope="module")
def issuer():
    idp = Issuer(KEYS.values())
    yield idp
    idp.close()


def bearer(token):
    return {**V1, "authorization": f"Bearer {token}"}


def call(server, token, method="ListTasks", params=None):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                       "params": params or {}}).encode()
    return server.handle_http("POST", "/", "", bearer(token), body)


# -- valid tokens ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(KEYS))
def test_a_token_of_each_key_type_is_accepted_and_names_its_caller(issuer, kind):
    auth = issuer.auth()
    token = KEYS[kind].token(issuer.url, sub=f"user-{kind}")
    server = a2a_min.Server(scenario_agent, authenticate=auth)
    resp = call(server, token)
    assert resp.status == 200 and "result" in json.loads(resp.body), resp.body
    assert auth.claims(token)["sub"] == f"user-{kind}"


def test_the_principal_may_be_another_claim(issuer):
    auth = issuer.auth(principal_claim="email")
    ctx = a2a_min.CallContext(headers=bearer(KEYS["ES256"].token(issuer.url, email="a@x.test")))
    assert auth(ctx) == "a@x.test"
    ctx = a2a_min.CallContext(headers=bearer(KEYS["ES256"].token(issuer.url)))
    with pytest.raises(a2a_min.AuthenticationRequiredError):
        auth(ctx)                                   # (no email claim: nobody)


def test_valid_tokens_on_every_binding_and_callers_never_see_each_others_tasks(
        issuer, make_client):
    client = make_client(a2a_min.Server(scenario_agent, authenticate=issuer.auth()))
    alice = bearer(KEYS["RS256"].token(issuer.url, sub="alice"))
    bob = bearer(KEYS["EdDSA"].token(issuer.url, sub="bob"))
    task = client.result("SendMessage", {"message": user_message("wait")}, headers=alice)["task"]
    assert client.result("GetTask", {"id": task["id"]}, headers=alice)["id"] == task["id"]
    assert client.error("GetTask", {"id": task["id"]}, headers=bob)["code"] == -32001
    assert client.result("ListTasks", {}, headers=bob)["totalSize"] == 0
    assert client.result("ListTasks", {}, headers=alice)["totalSize"] == 1
    expired = bearer(KEYS["RS256"].token(issuer.url, exp=int(time.time()) - 600))
    error = client.error("ListTasks", {}, headers=expired)
    assert error["code"] == -31401 and "invalid_token" in error["message"]
    assert client.error("ListTasks", {}, headers=V1)["code"] == -31401


# -- the attack set -------------------------------------------------------------------------

def _unsigned(issuer, header, claims=None):
    now = int(time.time())
    body = {"iss": issuer.url, "aud": AUDIENCE, "sub": "mallory", "exp": now + 300,
            **(claims or {})}
    return b64(json.dumps(header).encode()) + "." + b64(json.dumps(body).encode())


def _hs256_with_the_public_key(issuer):
    signing_input = _unsigned(issuer, {"alg": "HS256", "typ": "JWT", "kid": "rs256-1"})
    mac = hmac.new(KEYS["RS256"].pem, signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + b64(mac)


def _other_key():
    return Key("RS256", "rs256-1")                 # (a key of the attacker's, the issuer's kid)


ATTACKS = {
    "alg none": lambda i: _unsigned(i, {"alg": "none", "typ": "JWT"}) + ".",
    "alg none with a kid": lambda i: _unsigned(i, {"alg": "none", "kid": "rs256-1"}) + ".",
    "HS256 keyed with the public key PEM": _hs256_with_the_public_key,
    "a kid naming another key": lambda i: KEYS["ES256"].token(i.url, header={"kid": "eddsa-1"}),
    "the issuer's kid, the attacker's key": lambda i: _other_key().token(i.url),
    "an RSA key made to verify ES256": lambda i: KEYS["ES256"].token(
        i.url, header={"kid": "rs256-1"}),
    "RS256 signature, PS256 claimed": lambda i: KEYS["RS256"].token(
        i.url, alg="RS256", header={"alg": "PS256"}),
    "expired": lambda i: KEYS["RS256"].token(i.url, exp=int(time.time()) - 120),
    "not yet valid": lambda i: KEYS["RS256"].token(i.url, nbf=int(time.time()) + 600),
    "issued in the future": lambda i: KEYS["RS256"].token(i.url, iat=int(time.time()) + 600),
    "no exp": lambda i: KEYS["RS256"].token(i.url, exp=None),
    "wrong audience": lambda i: KEYS["EdDSA"].token(i.url, aud="https://other.test"),
    "no audience": lambda i: KEYS["EdDSA"].token(i.url, aud=None),
    "wrong issuer": lambda i: KEYS["EdDSA"].token("https://evil.test"),
    "no subject": lambda i: KEYS["EdDSA"].token(i.url, sub=None),
    "a bad signature": lambda i: KEYS["ES256"].token(i.url)[:-6] + "AAAAAA",
    "a huge token": lambda i: KEYS["ES256"].token(i.url, pad="x" * 20000),
    "not a JWT": lambda i: "not-a-jwt",
    "a kid that is not a string": lambda i: KEYS["ES256"].token(i.url, header={"kid": {"a": 1}}),
    "an alg that is not a string": lambda i: _unsigned(i, {"alg": ["ES256"]}) + ".AAAA",
    "not ASCII": lambda i: KEYS["ES256"].token(i.url) + "\u00e9",
    "a JSON array for a header": lambda i: b64(b"[1]") + "." + b64(b"{}") + ".AAAA",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_attack_set_is_refused_with_invalid_token_and_no_detail(issuer, attack):
    server = a2a_min.Server(scenario_agent, authenticate=issuer.auth())
    token = ATTACKS[attack](issuer)
    resp = call(server, token)
    assert resp.status == 401, (attack, resp.body)
    assert ("WWW-Authenticate", 'Bearer realm="a2a", error="invalid_token"') in resp.headers
    error = json.loads(resp.body)["error"]
    assert error["code"] == -31401
    assert error["message"] == ("invalid_token: the bearer token was not accepted; get a "
                                f"token from {issuer.url} for the audience {AUDIENCE}")


def test_a_valid_token_still_passes_within_the_leeway(issuer):
    auth = issuer.auth(leeway=30)
    now = int(time.time())
    assert auth.claims(KEYS["RS256"].token(issuer.url, exp=now - 10, nbf=now + 10))


def test_a_huge_token_is_refused_before_it_is_parsed(issuer, monkeypatch):
    auth = issuer.auth(max_token_bytes=1024)
    monkeypatch.setattr(auth.jwt, "get_unverified_header",
                        lambda token: pytest.fail("parsed a token over max_token_bytes"))
    with pytest.raises(a2a_min.AuthenticationRequiredError):
        auth.claims("e" * 1025)


@pytest.mark.parametrize("where", ["jku", "x5u", "jwk"])
def test_key_headers_are_never_followed(issuer, where):
    tripwire = Tripwire()
    try:
        attacker = Key("RS256", "attacker-1")
        value = attacker.jwk if where == "jwk" else tripwire.url
        auth = issuer.auth(refresh_interval=0)
        server = a2a_min.Server(scenario_agent, authenticate=auth)
        assert call(server, attacker.token(issuer.url, header={where: value})).status == 401
        # (the header on a good token changes nothing either way: it is not read)
        good = KEYS["RS256"].token(issuer.url, header={where: value})
        assert call(server, good).status == 200
        time.sleep(0.3)
        assert tripwire.contacted == 0
    finally:
        tripwire.close()


def test_a_flood_of_unknown_kids_fetches_the_jwks_a_bounded_number_of_times():
    idp = Issuer(KEYS.values())
    try:
        auth = idp.auth(refresh_interval=60)
        server = a2a_min.Server(scenario_agent, authenticate=auth)
        assert call(server, KEYS["RS256"].token(idp.url)).status == 200
        assert idp.fetches == 1
        attacker = Key("ES256", "x")
        threads = [threading.Thread(target=lambda n=n: [call(server, attacker.token(
            idp.url, header={"kid": f"unknown-{n}-{m}"})) for m in range(20)])
            for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert idp.fetches <= 2, idp.fetches          # (one refetch, then the interval holds)
        assert call(server, KEYS["EdDSA"].token(idp.url)).status == 200
    finally:
        idp.close()


def test_a_new_key_is_found_by_its_kid_once_the_interval_passed():
    idp = Issuer([KEYS["RS256"]])
    try:
        auth = idp.auth(refresh_interval=0.2)
        assert auth.claims(KEYS["RS256"].token(idp.url))
        rotated = Key("ES256", "rotated-1")
        idp.keys.append(rotated)
        time.sleep(0.3)
        assert auth.claims(rotated.token(idp.url, sub="carol"))["sub"] == "carol"
        assert idp.fetches == 2
    finally:
        idp.close()


def test_the_jwks_is_cached_for_its_max_age_and_refreshed_after():
    idp = Issuer([KEYS["ES256"]], max_age=1)
    try:
        auth = idp.auth(refresh_interval=0.1)
        for _ in range(5):
            assert auth.claims(KEYS["ES256"].token(idp.url))
        assert idp.fetches == 1
        time.sleep(1.2)
        assert auth.claims(KEYS["ES256"].token(idp.url))       # (the cached key, meanwhile)
        deadline = time.monotonic() + 5
        while idp.fetches < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert idp.fetches == 2                             # (refreshed in the background)
    finally:
        idp.close()


def test_an_issuer_that_is_down_leaves_the_cached_keys_working():
    idp = Issuer(KEYS.values(), max_age=0)
    try:
        auth = idp.auth(refresh_interval=0.1)
        server = a2a_min.Server(scenario_agent, authenticate=auth)
        assert call(server, KEYS["PS256"].token(idp.url)).status == 200
        idp.down = True
        for _ in range(3):
            time.sleep(0.15)
            assert call(server, KEYS["PS256"].token(idp.url)).status == 200
            assert call(server, KEYS["ES256"].token(idp.url, header={"kid": "new"})).status == 401
        idp.close()                                   # (and gone altogether)
        time.sleep(0.15)
        assert call(server, KEYS["EdDSA"].token(idp.url)).status == 200
    finally:
        idp.close()


def test_a_slow_fetch_never_blocks_other_callers():
    idp = Issuer([KEYS["RS256"]], max_age=0)
    try:
        auth = idp.auth(refresh_interval=0.1, fetch_timeout=3)
        assert auth.claims(KEYS["RS256"].token(idp.url))
        gate = threading.Event()
        fetch = auth._get

        def slow(url):
            gate.wait(5)
            return fetch(url)
        auth._get = slow
        time.sleep(0.15)
        unknown = threading.Thread(target=lambda: call(
            a2a_min.Server(scenario_agent, authenticate=auth),
            KEYS["RS256"].token(idp.url, header={"kid": "unknown"})))
        unknown.start()                              # (waits on the slow fetch)
        started = time.monotonic()
        assert auth.claims(KEYS["RS256"].token(idp.url))
        assert time.monotonic() - started < 1.0
        gate.set()
        unknown.join(10)
    finally:
        idp.close()


def test_callers_arriving_together_at_a_cold_start_all_get_in():
    idp = Issuer(KEYS.values())
    try:
        server = a2a_min.Server(scenario_agent, authenticate=idp.auth())
        statuses = []
        threads = [threading.Thread(target=lambda k=k: statuses.append(
            call(server, KEYS[k].token(idp.url)).status)) for k in sorted(KEYS) * 4]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert statuses == [200] * len(threads) and idp.fetches == 1
    finally:
        idp.close()


# -- scopes, and 403 ------------------------------------------------------------------------

def test_missing_scopes_are_403_insufficient_scope_on_each_binding(issuer, make_client):
    auth = issuer.auth(scopes={"SendMessage": ["agent:write"], "ListTasks": ["agent:read"]})
    client = make_client(a2a_min.Server(scenario_agent, authenticate=auth))
    reader = bearer(KEYS["RS256"].token(issuer.url, scope="agent:read openid"))
    writer = bearer(KEYS["RS256"].token(issuer.url, scp=["agent:write", "agent:read"]))
    assert client.result("ListTasks", {}, headers=reader)["totalSize"] == 0
    error = client.error("SendMessage", {"message": user_message("x")}, headers=reader)
    assert error["code"] == -31403 and "agent:write" in error["message"]
    assert error.get("grpcStatus", "PERMISSION_DENIED") == "PERMISSION_DENIED"
    assert error.get("httpStatus", 403) == 403
    assert client.result("SendMessage", {"message": user_message("x")}, headers=writer)["task"]


def test_star_names_the_scopes_of_the_other_operations(issuer):
    auth = issuer.auth(scopes={"GetTask": [], "*": ["agent"]})
    server = a2a_min.Server(scenario_agent, authenticate=auth)
    token = KEYS["ES256"].token(issuer.url)
    assert json.loads(call(server, token).body)["error"]["code"] == -31403
    assert json.loads(call(server, token, "GetTask", {"id": "x"}).body)["error"]["code"] == -32001


def test_global_scopes_and_the_403_over_http(issuer):
    server = a2a_min.Server(scenario_agent, authenticate=issuer.auth(scopes=["agent"]))
    token = KEYS["ES256"].token(issuer.url, scope="other")
    resp = server.handle_http("GET", "/tasks", "", bearer(token), b"")
    assert resp.status == 403
    error = json.loads(resp.body)["error"]
    assert error["status"] == "PERMISSION_DENIED"
    assert error["details"][0]["reason"] == "INSUFFICIENT_SCOPE"
    assert call(server, KEYS["ES256"].token(issuer.url, scope="agent")).status == 200


def test_the_403_carries_its_challenge(issuer):
    server = a2a_min.Server(scenario_agent, authenticate=issuer.auth(scopes=["agent"]))
    token = KEYS["ES256"].token(issuer.url, scope="other")
    rest = server.handle_http("GET", "/tasks", "", bearer(token), b"")
    rpc = call(server, token)
    challenge = 'Bearer realm="a2a", error="insufficient_scope", scope="agent"'
    assert ("WWW-Authenticate", challenge) in rest.headers
    assert rpc.status == 403 and ("WWW-Authenticate", challenge) in rpc.headers


# -- the card, the constructor, the command line ---------------------------------------------

def test_the_card_declares_openid_connect_or_oauth2(issuer):
    server = a2a_min.Server(scenario_agent, authenticate=issuer.auth())
    card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
    assert card["securitySchemes"] == {"oidc": {"openIdConnectSecurityScheme": {
        "openIdConnectUrl": issuer.url + "/.well-known/openid-configuration"}}}
    assert card["securityRequirements"] == [{"schemes": {"oidc": {"list": []}}}]
    flows = {"clientCredentials": {"tokenUrl": issuer.url + "/token",
                                   "scopes": {"agent": "call the agent"}}}
    server = a2a_min.Server(scenario_agent, authenticate=issuer.auth(oauth2_flows=flows,
                                                                     name="oauth"))
    card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
    assert card["securitySchemes"] == {"oauth": {"oauth2SecurityScheme": {"flows": flows}}}
    # The scopes some operation needs are the card's requirement (and one proto parse holds it).
    server = a2a_min.Server(scenario_agent, authenticate=issuer.auth(
        scopes={"SendMessage": "agent:write", "*": ["agent:read"]}))
    card = json.loads(server.handle_http("GET", "/.well-known/agent-card.json").body)
    assert card["securityRequirements"] == [
        {"schemes": {"oidc": {"list": ["agent:read", "agent:write"]}}}]
    assert a2a_min.parse("AgentCard", card)["securityRequirements"] == \
        card["securityRequirements"]


def test_missing_credentials_and_anonymous_callers(issuer):
    server = a2a_min.Server(scenario_agent, authenticate=issuer.auth())
    resp = server.handle_http("GET", "/tasks", "", dict(V1), b"")
    assert resp.status == 401 and ("WWW-Authenticate", 'Bearer realm="a2a"') in resp.headers
    assert issuer.url in json.loads(resp.body)["error"]["message"]
    auth = issuer.auth(anonymous=True)
    assert auth(a2a_min.CallContext(headers=dict(V1))) is None
    with pytest.raises(a2a_min.AuthenticationRequiredError):      # (a bad token is not nobody)
        auth(a2a_min.CallContext(headers=bearer("bad")))


def test_keys_given_directly_need_no_issuer_to_be_up():
    auth = a2a_jwt.JwtAuth(issuer="https://id.invalid", audience=AUDIENCE,
                           keys={"es256-1": KEYS["ES256"].pem})
    assert auth.claims(KEYS["ES256"].token("https://id.invalid"))
    auth = a2a_jwt.JwtAuth(issuer="https://id.invalid", audience=AUDIENCE,
                           jwks={"keys": [KEYS["EdDSA"].jwk, {"kty": "oct", "k": "c2VjcmV0",
                                                              "kid": "hmac"}]})
    assert auth.claims(KEYS["EdDSA"].token("https://id.invalid"))
    assert set(auth._keys) == {"eddsa-1"}             # (a symmetric key is never used)
    assert auth.fetches == 0


@pytest.mark.parametrize("url", ["http://id.example", "ftp://127.0.0.1", "http://10.0.0.1"])
def test_keys_are_fetched_over_https_only_but_on_loopback(url):
    with pytest.raises(ValueError, match="https"):
        a2a_jwt.JwtAuth(issuer=url, audience=AUDIENCE)
    a2a_jwt.JwtAuth(issuer="http://127.0.0.1:1", audience=AUDIENCE)


def test_issuer_and_audience_are_required():
    with pytest.raises(ValueError):
        a2a_jwt.JwtAuth(issuer="https://id.example", audience="")


def test_serve_takes_jwt_issuer_and_audience(issuer):
    import a2a_cli
    args = a2a_cli._parser().parse_args(["--jwt-issuer", issuer.url, "--jwt-audience", AUDIENCE,
                                         "--jwt-scope", "agent"])
    auth = a2a_cli._authenticate(args, a2a_cli._parser())
    assert isinstance(auth, a2a_jwt.JwtAuth)
    assert (auth.issuer, auth.audience, auth.scopes) == (issuer.url, AUDIENCE, ("agent",))
    with pytest.raises(SystemExit):
        a2a_cli._authenticate(a2a_cli._parser().parse_args(["--jwt-issuer", issuer.url]),
                              a2a_cli._parser())


def test_the_command_lines_send_and_check_send_the_token_given_as_auth(issuer):
    import io

    import a2a_cli
    from harness import Live
    live = Live(a2a_min.demo_server(authenticate=issuer.auth()), timeout=5)
    try:
        token = KEYS["ES256"].token(issuer.url, sub="carol")
        out, err = io.StringIO(), io.StringIO()
        assert a2a_cli.verbs_main(["send", live.url, "hi", "--auth", f"Bearer {token}"],
                                  out, err) == 0, err.getvalue()
        assert json.loads(call(live.server, token).body)["result"]["totalSize"] == 1
        assert json.loads(call(live.server, KEYS["ES256"].token(issuer.url, sub="dave")).body)[
            "result"]["totalSize"] == 0
        out, err = io.StringIO(), io.StringIO()
        assert a2a_cli.verbs_main(["send", live.url, "hi"], out, err) == 1
        assert "--auth" in err.getvalue()
        out, err = io.StringIO(), io.StringIO()
        status = a2a_cli.verbs_main(["check", live.url, "--auth", f"Bearer {token}"], out, err)
        assert status == 0, out.getvalue()[-2000:] + err.getvalue()
    finally:
        live.close()


def test_serve_with_jwt_issuer_in_a_process_of_its_own(issuer, monkeypatch):
    """python a2a_min.py --jwt-issuer URL --jwt-audience AUD: the card names the
    issuer's discovery document, a token of the issuer gets in, none does not
    (the process trusts the suite's CA through SSL_CERT_FILE, as an operator's would)."""
    import http.client
    import sys

    from harness import free_port, run_host
    monkeypatch.setenv("SSL_CERT_FILE", suite_pki()["ca"])
    port = free_port()
    proc = run_host([sys.executable, "a2a_min.py", "--port", str(port), "--stats-interval", "0",
                     "--jwt-issuer", issuer.url, "--jwt-audience", AUDIENCE], port)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/.well-known/agent-card.json")
        card = json.loads(conn.getresponse().read())
        assert card["securitySchemes"]["oidc"]["openIdConnectSecurityScheme"][
            "openIdConnectUrl"] == issuer.url + "/.well-known/openid-configuration"
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                           "params": {}}).encode()
        conn.request("POST", "/", body, bearer(KEYS["EdDSA"].token(issuer.url)))
        resp = conn.getresponse()
        assert resp.status == 200 and "result" in json.loads(resp.read())
        conn.request("POST", "/", body, dict(V1))
        resp = conn.getresponse()
        assert resp.status == 401 and resp.getheader("WWW-Authenticate") == 'Bearer realm="a2a"'
        resp.read()
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_0_3_client_is_the_same_caller_as_a_1_0_client(issuer):
    """With compat="0.3", a 0.3 request with the token is the token's caller: the
    task it makes is that caller's in 1.0 too, and no one else's; scopes hold."""
    server = a2a_min.Server(scenario_agent, compat="0.3", authenticate=issuer.auth(
        scopes={"SendMessage": ["agent:write"]}))
    token = KEYS["RS256"].token(issuer.url, sub="erin", scope="agent:write")

    def rpc03(method, params, token):
        headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
        return json.loads(server.handle_http("POST", "/", "", headers, json.dumps(
            {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()).body)
    message = {"kind": "message", "messageId": "m-1", "role": "user",
               "parts": [{"kind": "text", "text": "hi"}]}
    task = rpc03("message/send", {"message": message}, token)["result"]
    assert json.loads(call(server, token, "GetTask", {"id": task["id"]}).body)["result"]
    other = KEYS["RS256"].token(issuer.url, sub="frank", scope="agent:write")
    assert rpc03("tasks/get", {"id": task["id"]}, other)["error"]["code"] == -32001
    assert "error" in rpc03("message/send", {"message": {**message, "messageId": "m-2"}},
                            KEYS["RS256"].token(issuer.url, sub="erin"))
    assert "error" in rpc03("tasks/get", {"id": task["id"]}, "not-a-token")
