"""Signed agent cards (section 8.4) and the API catalog (RFC 9727).

RFC 8785 canonical JSON against the RFC's own examples, the published JCS
vectors (their expected outputs typed here again), the PyPI rfc8785 package
and Node's JSON.stringify as oracles; cards signed here and verified by the
reference SDK (a2a-sdk 1.3, in a process of its own), and the other way
round; tampering, forged Host headers, bad keys and bad headers."""

import json
import os
import random
import re
import struct
import subprocess
import sys

import pytest

from harness import ROOT, Live, need, require_sdk
import a2a_min

need("cryptography", "signing cards needs the cryptography package (the test extra)")

import a2a_signing                                              # noqa: E402
from cryptography.hazmat.primitives import serialization        # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa   # noqa: E402


def jcs(value):
    return a2a_signing._jcs(value)


# -- RFC 8785 ---------------------------------------------------------------------------

def test_the_rfcs_examples_and_the_published_vectors():
    # RFC 8785 section 3.2.2 (also the vectors' values.json).
    assert jcs(json.loads(
        '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],'
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",'
        ' "literals": [null, true, false]}')) == (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}')
    # Section 3.2.3: keys sorted by UTF-16 code units (a surrogate pair sorts
    # below U+FB33, though its code point is above it); the vectors' weird.json.
    assert jcs(json.loads(
        '{"\\u20ac": "Euro Sign", "1": "One", "\\u0080": "Control\\u007f",'
        ' "\\ud83d\\ude02": "Smiley", "\\u00f6": "Latin Small Letter O With Diaeresis",'
        ' "\\ufb33": "Hebrew Letter Dalet With Dagesh", "</script>": "Browser Challenge"}')) == (
        '{"1":"One","</script>":"Browser Challenge","\u0080":"Control\u007f",'
        '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",'
        '"\U0001f602":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}')
    # The vectors' structures.json: nested objects sorted at every level, empty ones kept.
    assert jcs(json.loads(
        '{"1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0}, "10": { }, "": "empty", "a": { },'
        ' "111": [ { } ], "A": { }}')) == (
        '{"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}')


# RFC 8785 appendix B: IEEE 754 doubles (as bits) and how ECMAScript writes them.
APPENDIX_B = [
    (0x0000000000000000, "0"), (0x8000000000000000, "0"),
    (0x0000000000000001, "5e-324"), (0x8000000000000001, "-5e-324"),
    (0x7fefffffffffffff, "1.7976931348623157e+308"),
    (0xffefffffffffffff, "-1.7976931348623157e+308"),
    (0x4340000000000000, "9007199254740992"), (0xc340000000000000, "-9007199254740992"),
    (0x4430000000000000, "295147905179352830000"),
    (0x44b52d02c7e14af5, "9.999999999999997e+22"), (0x44b52d02c7e14af6, "1e+23"),
    (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
    (0x444b1ae4d6e2ef4e, "999999999999999700000"),
    (0x444b1ae4d6e2ef4f, "999999999999999900000"), (0x444b1ae4d6e2ef50, "1e+21"),
    (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"), (0x3eb0c6f7a0b5ed8d, "0.000001"),
    (0x41b3de4355555553, "333333333.3333332"), (0x41b3de4355555554, "333333333.33333325"),
    (0x41b3de4355555555, "333333333.3333333"), (0x41b3de4355555556, "333333333.3333334"),
    (0x41b3de4355555557, "333333333.33333343"),
    (0xbecbf647612f3696, "-0.0000033333333333333333"),
    (0x43143ff3c1cb0959, "1424953923781206.2"),
]


def double(bits):
    return struct.unpack(">d", struct.pack(">Q", bits))[0]


@pytest.mark.parametrize("bits, text", APPENDIX_B)
def test_numbers_as_ecmascript_writes_them(bits, text):
    assert jcs(double(bits)) == text


def test_integers_are_doubles_and_10_point_0_is_10():
    assert jcs([10.0, 10, -0.0, 1e21, 1e-7, 2 ** 53, 100]) == \
        "[10,10,0,1e+21,1e-7,9007199254740992,100]"


@pytest.mark.parametrize("value, why", [
    (float("nan"), "NaN"), (float("inf"), "Infinity"), (-float("inf"), "Infinity"),
    ("a\ud800b", "lone surrogate"), (2 ** 53 + 1, "no exact IEEE 754 double"),
    (10 ** 400, "no exact IEEE 754 double"), ({1: "x"}, "not a string"),
    (json.loads("[" * 70 + "]" * 70), "nests deeper"), (object(), "not JSON")])
def test_what_has_no_canonical_form_is_refused_with_the_reason(value, why):
    with pytest.raises(ValueError, match=why):
        jcs(value)


def random_json(rng, depth=0):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randint(-2 ** 53, 2 ** 53)
    if kind == 2:
        return double(rng.getrandbits(64)) if rng.random() < 0.5 else \
            rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-30, 30)
    if kind in (3, 4):
        return random_text(rng)
    if kind == 5:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {random_text(rng): random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def random_text(rng):
    pools = ("abcAB\"\\/", "".join(map(chr, range(32))), "\u0080\u00f6\u2028\u2029\u20ac\ufb33\ufeff",
             "\U0001f602\U0001f600\U00010000\U0010ffff", "\x7f ")
    return "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randrange(8)))


def finite(value):
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    if isinstance(value, list):
        return all(map(finite, value))
    if isinstance(value, dict):
        return all(map(finite, value.values()))
    return True


def test_the_same_bytes_as_an_independent_implementation():
    """PyPI's rfc8785 (Trail of Bits), as an oracle only, on 3,000 random documents."""
    need("rfc8785", "the differential check needs the rfc8785 package (the test extra)")
    import rfc8785
    rng = random.Random(8785)
    checked = 0
    while checked < 3000:
        value = random_json(rng)
        if not finite(value):
            continue
        assert jcs(value).encode("utf-8") == rfc8785.dumps(value), value
        checked += 1


def test_numbers_and_strings_as_nodes_json_stringify_writes_them():
    """Node (the ECMAScript the RFC follows) on 20,000 random doubles, from
    their bits, and 2,000 random strings."""
    need("node", "the ECMAScript oracle needs Node.js (Debian's nodejs)")
    rng = random.Random(262)
    bits = [rng.getrandbits(64) for _ in range(20000)] + [b for b, _ in APPENDIX_B]
    bits = [b for b in bits if (b >> 52) & 0x7ff != 0x7ff]          # no NaN, no Infinity
    texts = [random_text(rng) for _ in range(2000)]
    script = ("const lines = require('fs').readFileSync(0, 'utf8').trim().split('\\n');"
              "const out = lines.map(l => { const [kind, v] = JSON.parse(l);"
              "  if (kind === 'n') { const b = new DataView(new ArrayBuffer(8));"
              "    b.setBigUint64(0, BigInt(v)); return JSON.stringify(b.getFloat64(0)); }"
              "  return JSON.stringify(v); });"
              "process.stdout.write(JSON.stringify(out));")
    lines = [json.dumps(["n", str(b)]) for b in bits] + [json.dumps(["s", t]) for t in texts]
    node = subprocess.run(["node", "-e", script], input="\n".join(lines), capture_output=True,
                          text=True, encoding="utf-8", timeout=60)
    assert node.returncode == 0, node.stderr
    theirs = json.loads(node.stdout)
    ours = [jcs(double(b)) for b in bits] + [jcs(t) for t in texts]
    wrong = [(o, t) for o, t in zip(ours, theirs) if o != t]
    assert not wrong and len(theirs) == len(ours), wrong[:5]


# -- the payload (section 8.4.1) --------------------------------------------------------

def test_the_specifications_presence_example():
    card = {"name": "Example Agent", "description": "",
            "capabilities": {"streaming": False, "pushNotifications": False, "extensions": []},
            "skills": []}
    assert a2a_signing._card_payload(card) == (
        b'{"capabilities":{"pushNotifications":false,"streaming":false},"description":"",'
        b'"name":"Example Agent","skills":[]}')


def test_unknown_fields_and_signatures_are_not_signed_and_snake_case_reads_as_camel():
    card = {"name": "n", "description": "d", "version": "1", "skills": [],
            "default_input_modes": ["text/plain"], "defaultOutputModes": [],
            "capabilities": {"extensions": [{"uri": "urn:x", "required": False,
                                             "params": {"a": [1.0, {}]}}]},
            "supportedInterfaces": [{"url": "https://a.example/", "protocolBinding": "JSONRPC",
                                     "protocolVersion": "1.0", "tenant": ""}],
            "protocolVersion": "0.3.0", "url": "https://a.example/", "x-anything": {"y": 1},
            "signatures": [{"protected": "e30", "signature": "AA"}]}
    assert a2a_signing._card_payload(card) == (
        b'{"capabilities":{"extensions":[{"params":{"a":[1,{}]},"uri":"urn:x"}]},'
        b'"defaultInputModes":["text/plain"],"defaultOutputModes":[],"description":"d",'
        b'"name":"n","skills":[],"supportedInterfaces":[{"protocolBinding":"JSONRPC",'
        b'"protocolVersion":"1.0","url":"https://a.example/"}],"version":"1"}')


# -- keys ---------------------------------------------------------------------------------

def pem(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_pem(key):
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


KEYS = {
    "ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
    "ES384": lambda: ec.generate_private_key(ec.SECP384R1()),
    "RS256": lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048),
    "EdDSA": ed25519.Ed25519PrivateKey.generate,
}


@pytest.fixture(scope="module")
def keys():
    return {alg: make() for alg, make in KEYS.items()}


def make_server(**options):
    """The demo's agent, with any card fields changed."""
    card = dict(name="a2a_min echo", description="Echoes.", skills=[
        {"id": "echo", "name": "Echo", "description": "Repeats.", "tags": ["echo"]}])
    return a2a_min.Server(a2a_min._demo_agent, **{**card, **options})


def signed_server(key, **options):
    signer = a2a_signing.signer_from_pem(pem(key), kid="key-1")
    return make_server(public_url="https://agent.example", card_signer=signer, **options)


def served_card(server, host="agent.example", headers=None):
    response = a2a_min._card_response(server, headers or {}, f"http://{host}")
    return json.loads(response.body), response


@pytest.mark.parametrize("alg", list(KEYS))
def test_each_algorithm_signs_and_verifies(keys, alg):
    card, _ = served_card(signed_server(keys[alg]))
    signature = card["signatures"][0]
    header = json.loads(a2a_min._b64decode(signature["protected"]))
    assert header == {"typ": "JOSE", "alg": alg, "kid": "key-1"}
    if alg == "ES256":                      # JWS's R || S, not DER
        assert len(a2a_min._b64decode(signature["signature"])) == 64
    assert verified(card, {"key-1": public_pem(keys[alg])}) == \
        {"kid": "key-1", "alg": alg, "payload": "section 8.4.1"}
    # The newer, fully specified name for EdDSA with Ed25519 (RFC 9864) verifies too.
    if alg == "EdDSA":
        server = a2a_min.demo_server(public_url="https://agent.example", card_signer=(
            a2a_signing.signer_from_pem(pem(keys[alg]), kid="key-1", alg="Ed25519")))
        card, _ = served_card(server)
        assert verified(card, {"key-1": keys[alg].public_key()})["alg"] == \
            "Ed25519"
    # A private key object given to verify with: its public half is used.
    assert verified(card, {"key-1": keys[alg]})["alg"] in (alg, "Ed25519")


def verified(*args, **options):
    """verify_card's verdict without the signed content it also returns."""
    held = a2a_signing.verify_card(*args, **options)
    assert held["card"] == json.loads(a2a_signing._card_payload(held["card"]))
    return {k: v for k, v in held.items() if k != "card"}


def leaves(value, path=()):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from leaves(item, path + (i,))
    else:
        yield path


def test_changing_any_field_breaks_the_signature(keys):
    server = signed_server(keys["ES256"], skills=[
        {"id": "s", "name": "S", "description": "d", "tags": ["t"], "examples": ["e"]}])
    card, _ = served_card(server)
    trusted = {"key-1": public_pem(keys["ES256"])}
    a2a_signing.verify_card(card, trusted)
    paths = [p for p in leaves({k: v for k, v in card.items() if k != "signatures"})]
    assert len(paths) > 15
    for path in paths:
        forged = json.loads(json.dumps(card))
        target = forged
        for step in path[:-1]:
            target = target[step]
        old = target[path[-1]]
        target[path[-1]] = (not old) if isinstance(old, bool) else \
            old + 1 if isinstance(old, int) else str(old) + "x"
        with pytest.raises(a2a_signing.CardSignatureError, match="does not match this card"):
            a2a_signing.verify_card(forged, trusted)
    # Removing a field, adding an interface: the same.
    for change in (lambda c: c.pop("description"),
                   lambda c: c["supportedInterfaces"].append(
                       {"url": "https://evil.example/", "protocolBinding": "JSONRPC",
                        "protocolVersion": "1.0"})):
        forged = json.loads(json.dumps(card))
        change(forged)
        with pytest.raises(a2a_signing.CardSignatureError):
            a2a_signing.verify_card(forged, trusted)
    # A field the proto does not know is outside the signature, and the error says so.
    assert verified(dict(card, homepage="https://evil.example"), trusted)
    forged = dict(card, name="forged", homepage="https://evil.example")
    with pytest.raises(a2a_signing.CardSignatureError, match="does not know.*homepage"):
        a2a_signing.verify_card(forged, trusted)


def test_a_forged_host_changes_nothing_in_a_signed_card(keys):
    server = signed_server(keys["ES256"], trust_forwarded=True)
    live = Live(server)
    try:
        answers = [live.request("GET", "/.well-known/agent-card.json", headers=headers)
                   for headers in ({}, {"X-Forwarded-Host": "evil.example",
                                        "X-Forwarded-Proto": "http"})]
        # A Host it does not answer to is refused before the card (see test_who_may_call).
        forged, _ = live.request("GET", "/.well-known/agent-card.json",
                                 headers={"Host": "evil.example"})
        tenant = live.request("GET", "/tenant-x/.well-known/agent-card.json")
    finally:
        live.close()
    bodies = {data for _, data in answers}
    assert len(bodies) == 1, bodies
    assert len({resp.getheader("ETag") for resp, _ in answers}) == 1
    card = json.loads(bodies.pop())
    assert all(i["url"].startswith("https://agent.example") for i in card["supportedInterfaces"])
    a2a_signing.verify_card(card, {"key-1": public_pem(keys["ES256"])})
    assert tenant[0].status == 404       # no card of a tenant's own to sign differently
    assert forged.status == 421


def test_the_etag_covers_the_signature(keys):
    plain = a2a_min.demo_server(public_url="https://agent.example")
    _, unsigned = served_card(plain)
    _, signed = served_card(signed_server(keys["ES256"]))
    assert dict(unsigned.headers)["ETag"] != dict(signed.headers)["ETag"]


def test_signing_needs_public_url_and_a_working_signer(keys):
    signer = a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="k")
    with pytest.raises(ValueError, match="needs public_url"):
        a2a_min.demo_server(card_signer=signer)

    def broken(data):
        raise RuntimeError("the HSM is unplugged")
    broken.header = {"alg": "ES256", "kid": "k"}
    with pytest.raises(RuntimeError, match="HSM"):       # at start-up, not at the first GET
        a2a_min.demo_server(public_url="https://a.example", card_signer=broken)
    # A signer whose signature would not verify (here: one that signs other
    # bytes than it is given) is caught by its own check, at start-up.
    wrong = a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="k")
    wrong.__class__ = type("Wrong", (type(wrong),), {
        "__call__": lambda self, data: a2a_signing._Signer.__call__(self, data + b"x")})
    with pytest.raises(ValueError, match="does not verify with its own public key"):
        a2a_min.demo_server(public_url="https://a.example", card_signer=wrong)
    nameless = lambda data: b"x"                                   # noqa: E731
    nameless.header = {"alg": "ES256"}
    with pytest.raises(ValueError, match="needs kid"):
        a2a_min.demo_server(public_url="https://a.example", card_signer=nameless)


def test_bad_keys_and_bad_signatures_are_named(keys, tmp_path):
    card, _ = served_card(signed_server(keys["ES256"]))
    good = {"key-1": public_pem(keys["ES256"])}
    cases = [
        ({"key-2": public_pem(keys["ES256"])}, ("ES256",), "no key for kid 'key-1'"),
        ({"key-1": public_pem(keys["RS256"])}, ("ES256",), "ES256 needs an EC secp256r1 key"),
        ({"key-1": public_pem(keys["ES384"])}, ("ES256",), "ES256 needs an EC secp256r1 key"),
        ({"key-1": b"not a key"}, ("ES256",), "not PEM"),
        ({"key-1": str(tmp_path / "missing.pem")}, ("ES256",), "cannot read the key file"),
        (good, ("RS256",), "alg 'ES256' is not allowed"),
        (good, ("none", "ES384"), "alg 'ES256' is not allowed"),
    ]
    for trusted, algorithms, reason in cases:
        with pytest.raises(a2a_signing.CardSignatureError, match=re.escape(reason)):
            a2a_signing.verify_card(card, trusted, algorithms)

    def header(**fields):
        return a2a_signing._b64url(json.dumps(fields).encode())
    signature = card["signatures"][0]
    for entry, reason in [
            ({"protected": header(alg="none", kid="key-1"), "signature": ""},
             "alg 'none' is not allowed"),
            ({"protected": header(alg="HS256", kid="key-1"), "signature": "AA"},
             "alg 'HS256' is not allowed"),
            ({"protected": header(alg="XX9", kid="key-1"), "signature": "AA"},
             "alg 'XX9' is not allowed"),
            ({"protected": "%%%", "signature": "AA"}, "not base64url"),
            ({"protected": header(alg="ES256", kid="key-1"), "signature": "AAAA"},
             "an ES256 signature is 64 bytes"),
            ({"protected": header(alg="ES256", kid="key-1", crit=["b64"]),
              "signature": signature["signature"]}, "critical header"),
            ("just text", "is not an object")]:
        forged = dict(card, signatures=[entry])
        with pytest.raises(a2a_signing.CardSignatureError, match=re.escape(reason)):
            a2a_signing.verify_card(forged, good)
    # Another card's signature over this card.
    other, _ = served_card(signed_server(keys["ES256"], name="another agent"))
    with pytest.raises(a2a_signing.CardSignatureError, match="does not match this card"):
        a2a_signing.verify_card(dict(card, signatures=other["signatures"]), good)
    for card_, reason in [({}, "no signatures"), ({"signatures": "x"}, "not a list"),
                          ([], "not a JSON object")]:
        with pytest.raises(a2a_signing.CardSignatureError, match=reason):
            a2a_signing.verify_card(card_, good)
    # Too deep to canonicalise: a clear error, not a RecursionError.
    deep = dict(card, capabilities={"extensions": [{"uri": "u", "params": json.loads(
        '{"a":' * 80 + "1" + "}" * 80)}]})
    with pytest.raises(a2a_signing.CardSignatureError, match="deeper than"):
        a2a_signing.verify_card(deep, good)


def test_hmac_only_when_asked():
    secret = os.urandom(32)
    signer = a2a_signing._Signer(secret, "HS256", {"alg": "HS256", "kid": "shared"})
    import hashlib
    import hmac
    signer.__class__ = type("HmacSigner", (a2a_signing._Signer,), {
        "__call__": lambda self, data: hmac.new(self.key, data, hashlib.sha256).digest()})
    card, _ = served_card(a2a_min.demo_server(public_url="https://a.example", card_signer=signer))
    with pytest.raises(a2a_signing.CardSignatureError, match="not allowed"):
        a2a_signing.verify_card(card, {"shared": secret})
    assert verified(card, {"shared": secret}, ("HS256",))["alg"] == "HS256"
    with pytest.raises(a2a_signing.CardSignatureError, match="32 bytes or more"):
        a2a_signing.verify_card(card, {"shared": b"short"}, ("HS256",))


def test_signer_from_pem_refuses_what_cannot_sign(keys):
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    for key, options, reason in [
            (pem(weak), {}, "2048 bits or more, not 1024"),
            (pem(keys["ES256"]), {"alg": "RS256"}, "RS256 needs an RSA key"),
            (pem(keys["ES256"]), {"alg": "ES999"}, "unknown signing algorithm 'ES999'"),
            (pem(keys["ES256"]), {"alg": "HS256"}, "unknown signing algorithm 'HS256'"),
            (public_pem(keys["ES256"]), {}, "not a usable PEM private key")]:
        with pytest.raises(a2a_signing.CardSignatureError, match=re.escape(reason)):
            a2a_signing.signer_from_pem(key, kid="k", **options)
    with pytest.raises(a2a_signing.CardSignatureError, match="kid is required"):
        a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="")
    signer = a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="k",
                                         jku="https://agent.example/jwks.json")
    assert signer.header == {"alg": "ES256", "kid": "k", "jku": "https://agent.example/jwks.json"}


def test_a_jku_is_never_fetched(keys):
    """The key comes from the caller (here a callable, told the jku); the
    verifier itself opens no connection to the URL the signer chose."""
    signer = a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="k",
                                         jku="http://127.0.0.1:9/jwks.json")
    card, _ = served_card(a2a_min.demo_server(public_url="https://a.example", card_signer=signer))
    asked = []

    def trusted(kid, jku):
        asked.append((kid, jku))
        return None
    with pytest.raises(a2a_signing.CardSignatureError, match="no key for kid 'k'"):
        a2a_signing.verify_card(card, trusted)
    assert asked == [("k", "http://127.0.0.1:9/jwks.json")]


# -- the reference SDK, both ways -------------------------------------------------------

def sdk(request):
    require_sdk()
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "sdk_signing.py")],
                          input=json.dumps(request), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("alg", ["ES256", "RS256", "EdDSA"])
def test_the_reference_sdk_verifies_our_signed_card(keys, alg):
    card, _ = served_card(signed_server(keys[alg]))
    assert sdk({"op": "verify", "card": card, "key": public_pem(keys[alg]).decode(),
                "alg": alg}) == {"ok": True}
    forged = dict(card, name="forged")
    assert sdk({"op": "verify", "card": forged, "key": public_pem(keys[alg]).decode(),
                "alg": alg})["ok"] is False


def test_with_compat_the_signed_payload_is_the_1_0_card_and_both_verifiers_agree(keys):
    """With 0.3 compatibility the card served also carries 0.3's url,
    preferredTransport, protocolVersion and additionalInterfaces: not proto
    fields, so outside the signature; its 0.3 entries in supportedInterfaces
    are proto fields, and signed."""
    card, _ = served_card(signed_server(keys["ES256"], compat="0.3"))
    assert {"url", "preferredTransport", "protocolVersion"} <= set(card)
    payload = json.loads(a2a_signing._card_payload(card))
    assert not {"url", "preferredTransport", "protocolVersion", "additionalInterfaces"} & \
        set(payload)
    assert "0.3" in {i["protocolVersion"] for i in payload["supportedInterfaces"]}
    assert verified(card, {"key-1": public_pem(keys["ES256"])})["payload"] == \
        "section 8.4.1"
    assert sdk({"op": "verify", "card": card, "key": public_pem(keys["ES256"]).decode(),
                "alg": "ES256"}) == {"ok": True}


def test_we_verify_the_reference_sdks_signed_card(keys):
    card, _ = served_card(a2a_min.demo_server(public_url="https://agent.example"))
    signed = sdk({"op": "sign", "card": card, "key": pem(keys["ES256"]).decode(),
                  "header": {"alg": "ES256", "kid": "sdk-key", "typ": "JOSE"}})["card"]
    assert verified(signed, {"sdk-key": public_pem(keys["ES256"])}) == \
        {"kid": "sdk-key", "alg": "ES256", "payload": "section 8.4.1"}


def test_where_the_presence_rules_differ_the_field_is_named(keys):
    """A card with a REQUIRED field at its default (an empty description, no
    skills): section 8.4.1 keeps it in the payload; a2a-sdk 1.3 strips every
    empty value. Its signature verifies here, as the older form; ours does
    not verify there, and the difference is exactly those fields."""
    card, _ = served_card(make_server(public_url="https://agent.example"))
    card["description"], card["skills"] = "", []      # (a2a_min's Server refuses such a card)
    ours = json.loads(a2a_signing._card_payload(card))
    stripped = json.loads(a2a_signing.canonicalize(a2a_signing._stripped(ours)))
    assert set(ours) - set(stripped) == {"description", "skills"}

    signed = sdk({"op": "sign", "card": card, "key": pem(keys["ES256"]).decode(),
                  "header": {"alg": "ES256", "kid": "sdk-key", "typ": "JOSE"}})["card"]
    # The SDK's own output leaves the two REQUIRED fields out altogether; on the
    # card as it was (and as a2a_min serves such fields), its signature holds
    # only as the empty-values-stripped form.
    assert "description" not in signed and "skills" not in signed
    theirs = dict(card, signatures=signed["signatures"])
    with pytest.raises(a2a_signing.CardSignatureError, match="holds only over the older form"):
        a2a_signing.verify_card(theirs, {"sdk-key": public_pem(keys["ES256"])})
    assert verified(theirs, {"sdk-key": public_pem(keys["ES256"])}, allow_stripped=True)[
        "payload"] == "empty values stripped"
    mine = a2a_signing.sign_card(card, a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="k"))
    assert verified(mine, {"k": public_pem(keys["ES256"])})["payload"] == \
        "section 8.4.1"
    verdict = sdk({"op": "verify", "card": mine, "key": public_pem(keys["ES256"]).decode(),
                   "alg": "ES256"})
    assert verdict["ok"] is False, verdict


# -- the command line ---------------------------------------------------------------------

def test_the_demo_signs_its_card_from_the_command_line(keys, tmp_path):
    from harness import free_port
    import urllib.request
    key = tmp_path / "key.pem"
    key.write_bytes(pem(keys["EdDSA"]))
    port = free_port()
    demo = subprocess.Popen([sys.executable, os.path.join(ROOT, "a2a_min.py"), "--port",
                             str(port), "--sign-key", str(key), "--kid", "demo-key",
                             "--public-url", f"http://127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        banner = demo.stdout.readline()
        assert "card signed (EdDSA, kid demo-key)" in banner, banner
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/.well-known/agent-card.json",
                                    timeout=10) as answer:
            card = json.loads(answer.read())
    finally:
        demo.terminate()
        demo.wait(10)
    assert verified(card, {"demo-key": public_pem(keys["EdDSA"])})["alg"] == \
        "EdDSA"
    for argv, says in [(["--sign-key", str(key)], "needs --sign-key FILE, --kid KID and "
                                                 "--public-url URL"),
                       (["--sign-key", str(tmp_path / "none.pem"), "--kid", "k",
                         "--public-url", "http://x"], "cannot read the key file")]:
        done = subprocess.run([sys.executable, os.path.join(ROOT, "a2a_min.py"), *argv],
                              capture_output=True, text=True, timeout=30)
        assert done.returncode != 0 and says in done.stderr and "Traceback" not in done.stderr


# -- RFC 9727 ---------------------------------------------------------------------------

def test_the_api_catalog_lists_the_interfaces_and_the_card():
    live = Live(a2a_min.demo_server())
    try:
        resp, data = live.request("GET", "/.well-known/api-catalog")
        head, empty = live.request("HEAD", "/.well-known/api-catalog")
        root, _ = live.request("GET", "/", headers={"Accept": "text/plain"})
        tenant, _ = live.request("GET", "/team-a/.well-known/api-catalog")
        post, _ = live.request("POST", "/.well-known/api-catalog", b"{}",
                               {"Content-Type": "application/json"})
        card_answer, card = live.request("GET", "/.well-known/agent-card.json")
        card, card_link = json.loads(card), card_answer.getheader("Link")
    finally:
        live.close()
    assert resp.status == 200 and head.status == 200 and empty == b""
    assert resp.getheader("Content-Type") == \
        'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'
    linkset = json.loads(data)["linkset"]
    catalog = linkset[0]
    assert catalog["anchor"] == live.url + "/.well-known/api-catalog"
    urls = list(dict.fromkeys(i["url"] for i in card["supportedInterfaces"]))   # (1.0, 1.1)
    assert [item["href"] for item in catalog["item"]] == urls
    for entry in linkset[1:]:
        assert entry["anchor"] in urls
        assert entry["service-desc"] == [{"href": live.url + "/.well-known/agent-card.json",
                                          "type": "application/json"}]
    assert '</.well-known/api-catalog>; rel="api-catalog"' in root.getheader("Link")
    assert 'rel="api-catalog"' in card_link
    # A tenant has no well-known path of its own; its answers name the origin's catalog.
    assert tenant.status == 404
    assert 'rel="api-catalog"' in tenant.getheader("Link")
    assert post.status == 405


def test_the_api_catalog_of_a_single_path_mount():
    live = Live(a2a_min.demo_server(single_path="/invocations"))
    try:
        resp, data = live.request("GET", "/.well-known/api-catalog")
    finally:
        live.close()
    linkset = json.loads(data)["linkset"]
    assert [i["href"] for i in linkset[0]["item"]] == [live.url + "/invocations"]
    assert linkset[1]["service-desc"][0]["href"] == \
        live.url + "/invocations/.well-known/agent-card.json"





# -- the client and check ---------------------------------------------------------------

def test_the_client_and_check_verify_with_the_keys_they_are_given(keys, tmp_path):
    import io
    import a2a_client, a2a_check, a2a_cli
    public = tmp_path / "public.pem"
    public.write_bytes(public_pem(keys["ES256"]))
    other = tmp_path / "other.pem"
    other.write_bytes(public_pem(keys["EdDSA"]))
    live = Live(signed_server(keys["ES256"]))
    live.server.public_url = live.url        # (the card lists where this test reaches it)
    live.server.card.cache = None
    try:
        with a2a_client.Client(live.url, card_keys={"key-1": str(public)}) as client:
            assert {k: client.signature[k] for k in ("kid", "alg", "payload")} == \
                {"kid": "key-1", "alg": "ES256", "payload": "section 8.4.1"}
            assert client.send("hi")["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        with pytest.raises(a2a_client.ClientError, match="signature does not verify.*"
                                                         "ES256 needs an EC secp256r1 key"):
            a2a_client.Client(live.url, card_keys={"key-1": str(other)})
        results = {}
        for name, given in (("right", {"key-1": str(public)}), ("wrong", {"key-1": str(other)}),
                            ("none", None)):
            out = io.StringIO()
            results[name] = (a2a_check.check(live.url, out=out, keys=given), out.getvalue())
        out, err = io.StringIO(), io.StringIO()
        status = a2a_cli.verbs_main(["card", live.url, "--card-key", f"key-1={public}"], out, err)
    finally:
        live.close()
    assert results["right"][0] == 0 and \
        "PASS  §8.4.3   the card's signatures verify: kid key-1, ES256" in results["right"][1]
    assert results["wrong"][0] == 1 and "FAIL  §8.4.3   the card's signatures verify: " in \
        results["wrong"][1]
    assert results["none"][0] == 0 and "WARN  §8.4.3   the card's signatures: present, not " \
        "verified" in results["none"][1]
    assert status == 0


def test_check_fails_a_signature_header_without_kid(keys):
    import io
    import a2a_client, a2a_check, a2a_cli

    def signer(data):
        return a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="x")(data)
    signer.header = {"alg": "ES256", "kid": "x"}
    server = make_server(public_url="http://127.0.0.1:1", card_signer=signer)
    live = Live(server)
    server.public_url = live.url
    card, _ = served_card(server)
    entry = card["signatures"][0]
    entry["protected"] = a2a_signing._b64url(b'{"alg":"ES256","typ":"JWT"}')
    server.card.fields["signatures"] = []          # (served as is: the broken header)
    server.card.signer = None
    server.card.cache = None
    server.agent_card = lambda base_url=None: card
    try:
        out = io.StringIO()
        failed = a2a_check.check(live.url, out=out)
    finally:
        live.close()
    assert failed >= 1 and "FAIL  §8.4.2   signature 0: needs kid" in out.getvalue(), \
        out.getvalue()


# -- what an attacker's review found (each was accepted, or a traceback, before) ------

def test_a_snake_case_twin_of_a_signed_field_is_refused(keys):
    card, _ = served_card(signed_server(keys["ES256"]))
    trusted = {"key-1": public_pem(keys["ES256"])}
    evil = [{"url": "http://127.0.0.1:9/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]
    nested = json.loads(json.dumps(card))
    nested["supportedInterfaces"][0]["protocol_binding"] = "GRPC"
    for forged in (dict(card, supported_interfaces=evil), nested,
                   dict(card, default_input_modes=["application/x-evil"])):
        with pytest.raises(a2a_signing.CardSignatureError, match="has both"):
            a2a_signing.verify_card(forged, trusted)


def test_a_verified_client_uses_only_what_the_signature_covers(keys):
    """A 0.3 ``url`` (not a proto field: unsigned) added to a signed card must
    not become the interface a verified client calls, with its credentials."""
    import socket
    import a2a_client, a2a_check, a2a_cli
    signer = a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="k")
    signed = a2a_signing.sign_card({
        "name": "n", "description": "d", "version": "1", "capabilities": {},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [], "supportedInterfaces": [{"url": "https://agent.example",
                                                "protocolBinding": "HTTP+JSON",
                                                "protocolVersion": "1.0"}]}, signer)
    trap = socket.socket()
    trap.bind(("127.0.0.1", 0))
    trap.listen()
    trap.settimeout(0.3)
    forged = dict(signed, url=f"http://127.0.0.1:{trap.getsockname()[1]}/",
                  preferredTransport="JSONRPC", protocolVersion="0.3.0")
    try:
        with pytest.raises(a2a_min.A2AError):
            a2a_client.Client(forged, binding="JSONRPC", auth="Bearer s3cret",
                              card_keys={"k": public_pem(keys["ES256"])}).send("hi")
        with pytest.raises(socket.timeout):
            trap.accept()                           # nothing ever connected to the trap
    finally:
        trap.close()
    with a2a_client.Client(forged, card_keys={"k": public_pem(keys["ES256"])}) as client:
        assert "url" not in client.card and client.url == "https://agent.example"


def test_the_older_stripped_form_only_when_asked(keys):
    """Under the empty-values-stripped form every empty value is unsigned, and
    some mean something: securityRequirements [{}] is "anonymous allowed"."""
    server = signed_server(keys["ES256"], authenticate=a2a_min.BearerAuth({"t0ken": "alice"}))
    card, _ = served_card(server)
    assert card["securityRequirements"] == [{"schemes": {"bearer": {"list": []}}}]
    signer = a2a_signing.signer_from_pem(pem(keys["ES256"]), kid="old")
    protected = a2a_signing._b64url(b'{"alg":"ES256","kid":"old"}')
    older = a2a_signing.canonicalize(a2a_signing._stripped(json.loads(
        a2a_signing._card_payload(card))))
    signature = signer(f"{protected}.{a2a_signing._b64url(older)}".encode())
    signed_the_old_way = dict(card, signatures=[{"protected": protected,
                                                 "signature": a2a_signing._b64url(signature)}])
    forged = dict(signed_the_old_way, securityRequirements=[{}])
    trusted = {"old": public_pem(keys["ES256"])}
    for card_ in (signed_the_old_way, forged):
        with pytest.raises(a2a_signing.CardSignatureError, match="allow_stripped=True"):
            a2a_signing.verify_card(card_, trusted)
    held = a2a_signing.verify_card(forged, trusted, allow_stripped=True)
    assert held["payload"] == "empty values stripped" and "securityRequirements" not in \
        held["card"]


def test_a_public_keys_pem_is_never_an_hmac_secret(keys):
    import hashlib
    import hmac
    card, _ = served_card(signed_server(keys["ES256"]))
    public = public_pem(keys["ES256"])
    protected = a2a_signing._b64url(b'{"alg":"HS256","kid":"key-1"}')
    forged = dict(card, name="EVIL")
    data = f"{protected}.{a2a_signing._b64url(a2a_signing._card_payload(forged))}".encode()
    forged["signatures"] = [{"protected": protected, "signature": a2a_signing._b64url(
        hmac.new(public, data, hashlib.sha256).digest())}]
    with pytest.raises(a2a_signing.CardSignatureError, match="not a PEM key"):
        a2a_signing.verify_card(forged, {"key-1": public},
                                a2a_signing.DEFAULT_ALGORITHMS + ("HS256",))


def test_odd_headers_and_arguments_are_card_signature_errors_not_tracebacks(keys, tmp_path):
    card, _ = served_card(signed_server(keys["ES256"]))
    good = {"key-1": public_pem(keys["ES256"])}
    for header in (b"[" * 100000, b'{"alg":["ES256"],"kid":"key-1"}',
                   b'{"alg":"ES256","kid":{"a":1}}', b'{"alg":"ES256","kid":["key-1"]}',
                   b"\xff\xfe{}"):
        forged = dict(card, signatures=[{"protected": a2a_signing._b64url(header),
                                         "signature": card["signatures"][0]["signature"]}])
        with pytest.raises(a2a_signing.CardSignatureError):
            a2a_signing.verify_card(forged, good)
    for keys_, algorithms in ((["key-1"], a2a_signing.DEFAULT_ALGORITHMS), (good, None),
                              ({"key-1": "bad\0path"}, a2a_signing.DEFAULT_ALGORITHMS)):
        with pytest.raises(a2a_signing.CardSignatureError):
            a2a_signing.verify_card(card, keys_, algorithms)


def test_card_json_after_a_verified_signature_prints_only_what_was_signed(keys, tmp_path):
    import io
    import a2a_client, a2a_check, a2a_cli
    public = tmp_path / "public.pem"
    public.write_bytes(public_pem(keys["ES256"]))
    server = signed_server(keys["ES256"])
    card, _ = served_card(server)
    # An unsigned field added after signing (the signature still holds: it is not covered).
    card = dict(card, url="http://10.77.0.2/steer-me", snake_case_twin={"evil": True})
    server.agent_card = lambda base_url=None: card
    server.card.cache = None
    live = Live(server)
    try:
        out, err = io.StringIO(), io.StringIO()
        status = a2a_cli.verbs_main(["card", live.url, "--card-key", f"key-1={public}", "--json"],
                                 out, err)
    finally:
        live.close()
    assert status == 0 and "signature verified: kid key-1" in err.getvalue(), err.getvalue()
    shown = json.loads(out.getvalue())
    assert "url" not in shown and "snake_case_twin" not in shown and shown["name"] == card["name"]
    assert a2a_signing.verify_card(shown, {"key-1": str(public)})["kid"] == "key-1"
    assert "unsigned, not shown: url, snake_case_twin" in err.getvalue()
