"""The client against hostile agents: a card that aims it at another origin
or at the network behind it, answers that are not JSON, text meant for the
terminal, answers that drip. Real sockets on 127.0.0.1 (the Fake server of
test_client), and the address decision tested with address literals."""

import io
import json

import pytest

import a2a_client
import a2a_check
import a2a_cli
import a2a_min
from test_client import Fake, card_for, http_answer

MESSAGE = {"jsonrpc": "2.0", "id": 1, "result": {"message": {
    "messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "ok"}]}}}


def card_server(interface_url, **extra):
    """A Fake that serves only a card naming ``interface_url`` as its interface."""
    return Fake(lambda head, body, n: http_answer("200 OK", dict(card_for(interface_url),
                                                                 **extra)))


def headers_of(request):
    head = request.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    return {line.partition(":")[0].strip().lower(): line.partition(":")[2].strip()
            for line in head}


@pytest.fixture
def elsewhere():
    """The card's origin (A) names another origin (B, another port of
    127.0.0.1) as its interface; B records what it is sent."""
    other = Fake(lambda head, body, n: http_answer("200 OK", MESSAGE))
    card = card_server(other.url)
    yield card, other
    card.close()
    other.close()


def test_credentials_go_only_to_the_origin_named(elsewhere):
    card, other = elsewhere
    a2a_client.Client(card.url, auth="Bearer s3cret", headers={"Cookie": "sid=1"}).send("hi")
    sent = headers_of(other.requests[-1])
    assert "authorization" not in sent and "cookie" not in sent, sent
    # ... unless the user allows the other host.
    a2a_client.Client(card.url, auth="Bearer s3cret",
                      allow_hosts=[f"127.0.0.1:{other.port}"]).send("hi")
    assert headers_of(other.requests[-1])["authorization"] == "Bearer s3cret"
    # The command line: --allow-host.
    out, err = io.StringIO(), io.StringIO()
    assert a2a_cli.verbs_main(["send", card.url, "hi", "--auth", "Bearer t2"], out, err) == 0
    assert "authorization" not in headers_of(other.requests[-1])
    assert a2a_cli.verbs_main(["send", card.url, "hi", "--auth", "Bearer t2", "--allow-host",
                            "127.0.0.1"], out, err) == 0
    assert headers_of(other.requests[-1])["authorization"] == "Bearer t2"


def test_credentials_go_to_the_origin_named_itself():
    box = {}

    def answer(head, body, n):
        if head.startswith("GET /.well-known/agent-card.json"):
            return http_answer("200 OK", card_for(box["url"]))
        return http_answer("200 OK", MESSAGE)
    same = Fake(answer)
    box["url"] = same.url
    try:
        a2a_client.Client(same.url, auth="Bearer s3cret").send("hi")
        assert headers_of(same.requests[-1])["authorization"] == "Bearer s3cret"
    finally:
        same.close()


def test_a_401_from_another_origin_says_the_credentials_were_withheld():
    other = Fake(lambda head, body, n: http_answer("401 Unauthorized", b"no", "text/plain", (
        b"WWW-Authenticate: Bearer\r\n")))
    card = card_server(other.url)
    try:
        with pytest.raises(a2a_min.AuthenticationRequiredError, match="--allow-host 127.0.0.1"):
            a2a_client.Client(card.url, auth="Bearer s3cret").send("hi")
    finally:
        card.close()
        other.close()


NO_DNS = {"card.example": ["93.184.215.14"], "inside.example": ["10.77.0.2"],
          "mapped.example": ["::ffff:169.254.169.254"]}


@pytest.mark.parametrize("card_url, interface, refused", [
    ("https://93.184.215.14/", "http://10.77.0.2:8080/latest/meta-data/", True),
    ("https://card.example/", "http://169.254.169.254/", True),
    ("https://card.example/", "http://inside.example/", True),
    ("https://card.example/", "http://mapped.example/", True),      # IPv6 form of an IPv4 one
    ("https://card.example/", "[fd00::1]:50051", True),             # a gRPC target
    ("https://card.example/", "https://1.1.1.1/a2a", False),        # global to global
    ("http://10.0.0.1/", "http://10.77.0.2/", False),               # a private card, its neighbour
    ("http://127.0.0.1:8000/", "http://127.0.0.1:9000/", False),    # local to local
    ("https://card.example/", "https://card.example:8443/", False),  # its own host
])
def test_a_card_from_a_global_address_may_not_aim_at_a_private_one(card_url, interface, refused):
    resolve = NO_DNS.__getitem__                  # (no name is resolved for real)
    why = a2a_client.interface_refusal(card_url, interface, (), resolve)
    assert (why is not None) == refused, why
    if refused:
        assert "--allow-host" in why and "not globally routable" in why
        host = a2a_client._origin(interface)[1]
        assert a2a_client.interface_refusal(card_url, interface, [host], resolve) is None


def test_a_non_json_answer_is_described_not_echoed():
    other = Fake(lambda head, body, n: http_answer(
        "200 OK", b"AccessKeyId=AKIATOPSECRET\nSecretAccessKey=hunter2", "text/plain"))
    card = card_server(other.url)
    try:
        with pytest.raises(a2a_client.ClientError) as caught:
            a2a_client.Client(card.url, allow_hosts=["127.0.0.1"]).send("hi")
        message = caught.value.message
        assert "TOPSECRET" not in message and "hunter2" not in message
        assert "HTTP 200" in message and "text/plain" in message and "49 bytes" in message
        out, err = io.StringIO(), io.StringIO()
        assert a2a_cli.verbs_main(["send", card.url, "hi"], out, err) == 1
        assert "TOPSECRET" not in out.getvalue() + err.getvalue()
        assert "49 bytes" in err.getvalue()
    finally:
        card.close()
        other.close()


def test_the_client_refuses_such_an_interface_before_any_connection():
    card = card_for("http://10.77.0.2:8080/latest/meta-data")     # (nothing is dialed)
    with pytest.raises(a2a_client.ClientError, match="--allow-host 10.77.0.2"):
        a2a_client.Client(card, card_url="https://93.184.215.14/.well-known/agent-card.json",
                          auth="Bearer s3cret")


# -- text meant for the terminal --------------------------------------------------------

EVIL = "\x1b]52;c;ZXZpbA==\x07\r\x1b[2Ksignature verified\x9b31m"   # OSC 52, CR, erase, C1 CSI


def evil_agent(head, body, n):
    if head.startswith("GET /.well-known/agent-card.json"):
        card = card_for(evil_agent.url, name="fake" + EVIL, description="d" + EVIL)
        card["skills"] = [{"id": "s", "name": "n" + EVIL, "description": EVIL, "tags": []}]
        return http_answer("200 OK", card)
    try:
        method = json.loads(body or b"{}").get("method")
    except ValueError:
        method = None
    if method == "SendMessage":
        return http_answer("200 OK", {"jsonrpc": "2.0", "id": 1, "result": {"task": {
            "id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED", "message": {
                "messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "said" + EVIL}]}},
            "artifacts": [{"artifactId": "a", "name": "art" + EVIL,
                           "parts": [{"text": "text" + EVIL}]}]}}})
    return http_answer("200 OK", {"jsonrpc": "2.0", "id": 1, "error": {
        "code": -32001, "message": "no such task" + EVIL}})


@pytest.fixture
def evil():
    fake = Fake(evil_agent)
    evil_agent.url = fake.url
    yield fake
    fake.close()


def assert_clean(text):
    assert text and not any(c in text for c in "\x1b\x07\r\x9b"), repr(text)
    assert "\\x1b" in text, text


@pytest.mark.parametrize("argv", [["card"], ["send", "hi"], ["get", "t1"], ["cancel", "t1"]])
def test_the_command_line_escapes_control_characters_from_the_agent(evil, argv):
    out, err = io.StringIO(), io.StringIO()
    a2a_cli.verbs_main([argv[0], evil.url, *argv[1:]], out, err)
    assert_clean(out.getvalue() + err.getvalue())


def test_check_escapes_control_characters_from_the_agent(evil):
    out = io.StringIO()
    a2a_check.check(evil.url, out=out, timeout=2)
    assert_clean(out.getvalue())


def test_printable_keeps_newlines_tabs_and_text():
    assert a2a_client.printable("a\tb\nc é 東 \x1b\x7f\x85") == "a\tb\nc é 東 \\x1b\\x7f\\x85"


# -- answers that drip ------------------------------------------------------------------

def dripping(where):
    """A Fake whose card comes at once (unless ``where`` is "card") and whose
    answer drips a byte every 0.4 s: its head (``where`` "head") or its body
    (else), 25 bytes of it (10 s in all, then the rest at once)."""
    box = {}

    def answer(head, body, n):
        card = head.startswith("GET /.well-known/agent-card.json")
        whole = http_answer("200 OK", card_for(box["url"]) if card else MESSAGE)
        if card and where != "card":
            return whole
        start = whole.index(b"\r\n\r\n") + 4 if where != "head" else 0
        drip = [piece for byte in whole[start:start + 25] for piece in (bytes([byte]), 0.4)]
        return [whole[:start], *drip, whole[start + 25:]]
    fake = Fake(answer)
    box["url"] = fake.url
    return fake


@pytest.mark.parametrize("where", ["head", "body"])
def test_an_answer_that_drips_ends_at_the_timeout(where):
    fake = dripping(where)
    try:
        client = a2a_client.Client(fake.url, timeout=1.5)
        with pytest.raises(a2a_client.ClientError,
                           match=r"did not answer within 1.5 s \(its whole"):
            client.send("hi")
    finally:
        fake.close()


def test_each_step_of_check_ends_at_the_timeout():
    fake = dripping("card")
    try:
        out = io.StringIO()
        assert a2a_check.check(fake.url, out=out, timeout=1.5) >= 1
    finally:
        fake.close()
    assert "did not answer within 1.5 s (its whole answer)" in out.getvalue(), out.getvalue()
