"""a2a_signing: keys for a2a_min's signed agent cards (A2A 1.0, section 8.4).

A card may carry JWS signatures (RFC 7515) over its canonical form: the card
as the proto knows it, without ``signatures``, in RFC 8785 canonical JSON.
This module writes that form and assembles the signature with the standard
library alone (a2a_min calls sign_card() when a Server has a card_signer);
the keys and algorithms need the ``cryptography`` package (``pip install
cryptography``, or the ``signing`` extra), imported only when a key is used.
A server answers every request without this file. The caller's
side (verifying a card someone else signed) is here for the same reason.

    signer = signer_from_pem("key.pem", kid="key-1")     # ES256, RS256 or EdDSA
    server = a2a_min.Server(agent, public_url="https://agent.example", card_signer=signer)

    verify_card(card, {"key-1": open("public.pem", "rb").read()})

Keys are never fetched: ``verify_card`` uses only the keys its caller gives
(a ``jku`` in a header is a URL chosen by whoever signed, so trusting it
lets anyone sign a forged card with a key of their own). Algorithms come
from an explicit allowlist; ``none`` is never accepted, HMAC only when
named.
"""

__all__ = ["canonicalize", "card_payload", "sign_card", "signer_from_pem", "verify_card",
           "CardSignatureError", "DEFAULT_ALGORITHMS"]

import binascii
import json

from a2a_min import ENUMS, MESSAGES
# The second tier (a2a_min.COMPANION_API): field names and base64.
from a2a_min import _b64decode, _b64encode, _snake

# What verify_card accepts unless told otherwise: the asymmetric algorithms a
# card is signed with. EdDSA's newer, fully specified name (RFC 9864) is Ed25519.
DEFAULT_ALGORITHMS = ("ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519")
_HMAC = ("HS256", "HS384", "HS512")


class CardSignatureError(ValueError):
    """A card whose signatures cannot be made or do not hold; the message says why."""


# The card's signature (section 8.4). A signed card carries, in ``signatures``,
# detached JWS (RFC 7515) over one exact byte string: the card as the proto
# knows it (section 8.4.1: fields the proto does not define dropped; REQUIRED
# fields always there; ``optional`` ones when set; any other field left out at
# its default), without ``signatures``, written as RFC 8785 canonical JSON
# (JCS): no whitespace, object keys sorted by their UTF-16 code units, strings
# escaped as ECMAScript's JSON.stringify escapes them, and numbers written as
# ECMAScript writes an IEEE 754 double. Any two implementations that follow
# both rules sign and verify the same bytes. The server asks its card_signer
# (bytes -> signature bytes) to sign, through sign_card() below.

# JSON.stringify's escapes: the two-character ones, \u00XX (lower case hex) for
# the other controls, and nothing else (not even U+2028 or DEL).
_JCS_ESCAPES = {**{i: "\\u%04x" % i for i in range(32)}, 8: "\\b", 9: "\\t", 10: "\\n",
                12: "\\f", 13: "\\r", 34: '\\"', 92: "\\\\"}
_JCS_MAX_DEPTH = 64


def _jcs_number(value):
    """An IEEE 754 double as ECMAScript's Number.prototype.toString writes it
    (RFC 8785 section 3.2.2.3): the shortest digits that read back as the
    same double (Python's repr finds the same ones), placed by the
    ECMAScript rules: plain up to 21 digits, 0.000001 and up without an
    exponent, an exponent otherwise."""
    if isinstance(value, int):
        exact = float(value) if abs(value) < 2 ** 1024 else None
        if exact != value:
            raise ValueError(f"the integer {value} has no exact IEEE 754 double (RFC 8785 "
                             "numbers are doubles): send it as a string")
        value = exact
    if value - value != 0:                               # inf - inf and nan - nan are nan
        raise ValueError(f"{value} is not a JSON number (RFC 8785 refuses NaN and Infinity)")
    if value == 0:
        return "0"                                       # -0 too
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0").rstrip("0")
    # The decimal point sits after the first ``point`` digits (value = 0.DIGITS x 10^point).
    if whole != "0":
        point = len(whole) + int(exponent or 0)
    else:
        point = int(exponent or 0) - (len(fraction) - len(fraction.lstrip("0")))
    size = len(digits)
    if size <= point <= 21:
        text = digits + "0" * (point - size)
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        text = digits[0] + ("." + digits[1:] if size > 1 else "") + \
            "e" + ("+" if point > 0 else "-") + str(abs(point - 1))
    return "-" + text if value < 0 else text


def _jcs(value, depth=0):
    """``value`` (parsed JSON) as RFC 8785 canonical JSON text; ValueError
    for what has no canonical form (lone surrogates, NaN, deep nesting)."""
    if depth > _JCS_MAX_DEPTH:
        raise ValueError(f"the JSON nests deeper than {_JCS_MAX_DEPTH} levels")
    if value is True or value is False or value is None:
        return "true" if value else "false" if value is False else "null"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate, which RFC 8785 refuses") \
                from None
        return '"' + value.translate(_JCS_ESCAPES) + '"'
    if isinstance(value, (int, float)):
        return _jcs_number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_jcs(item, depth + 1) for item in value) + "]"
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise ValueError(f"an object key is {type(key).__name__}, not a string")
        return "{" + ",".join(_jcs(key) + ":" + _jcs(value[key], depth + 1)
                              for key in sorted(value, key=_utf16)) + "}"
    raise ValueError(f"{type(value).__name__} is not JSON")


def _utf16(key):
    return key.encode("utf-16-be", "surrogatepass")


def _presence(value, message_type, path, depth=0):
    """A message as section 8.4.1 has it signed: the fields MESSAGES knows,
    each under its camelCase name; REQUIRED and ``optional`` (and oneof)
    fields as they are, even empty; other repeated fields and maps when not
    empty; a set message always; any other scalar unless it is its default."""
    if not isinstance(value, dict):
        raise ValueError(f"{path} must be an object ({message_type})")
    if depth > _JCS_MAX_DEPTH:
        raise ValueError(f"{path} nests deeper than {_JCS_MAX_DEPTH} levels")
    out = {}
    for _, name, type_, labels in MESSAGES[message_type]:
        key = name if name in value else _snake(name)
        if name in value and _snake(name) != name and _snake(name) in value:
            # Parsers read either spelling (the last one wins): one must not be
            # signed while the other is used.
            raise ValueError(f"{path} has both {name} and {_snake(name)}")
        if key not in value or (message_type == "AgentCard" and name == "signatures"):
            continue
        item, words, where = value[key], labels.split(), f"{path}.{name}"
        if "repeated" in words:
            if item or "required" in words:
                out[name] = [_presence_item(v, type_, f"{where}[{i}]", depth)
                             for i, v in enumerate(_listed(item, where))]
        elif type_.startswith("map<"):
            if item or "required" in words:
                kind = type_[4:-1].split(",")[1].strip()
                if not isinstance(item, dict):
                    raise ValueError(f"{where} must be an object (a map)")
                out[name] = {k: _presence_item(v, kind, f"{where}.{k}", depth)
                             for k, v in item.items()}
        elif type_ in MESSAGES or "required" in words or "optional" in words or \
                any(w.startswith("oneof:") for w in words):
            out[name] = _presence_item(item, type_, where, depth)
        elif item not in ("", 0, None) and not (type_ in ENUMS and item == ENUMS[type_][0]):
            out[name] = item                            # (0 == False: false is left out too)
    return out


def _presence_item(value, type_, path, depth):
    return _presence(value, type_, path, depth + 1) if type_ in MESSAGES else value


def _listed(value, path):
    if not isinstance(value, list):
        raise ValueError(f"{path} must be a list")
    return value


def _card_payload(card):
    """The bytes a card's signatures sign (section 8.4.1): the card as the proto
    knows it, without ``signatures``, as RFC 8785 canonical JSON in UTF-8."""
    return _jcs(_presence(card, "AgentCard", "card")).encode("utf-8")


def _b64url(data):
    """bytes -> base64url without padding (RFC 7515 section 2)."""
    return _b64encode(data).rstrip("=").replace("+", "-").replace("/", "_")


def sign_card(card, signer):
    """``card`` with one more AgentCardSignature (section 8.4.2): a JWS
    protected header (``signer.header``: alg, kid, maybe jku; typ JOSE) and
    the signer's signature of header.payload, both base64url."""
    header = {"typ": "JOSE", **signer.header}
    missing = [name for name in ("alg", "kid") if not header.get(name)]
    if missing:
        raise ValueError(f"the card signer's header needs {' and '.join(missing)} (section "
                         "8.4.2); a2a_signing.signer_from_pem() sets both")
    protected = _b64url(json.dumps(header, separators=(",", ":")).encode())
    signing_input = f"{protected}.{_b64url(_card_payload(card))}".encode("ascii")
    signature = signer(signing_input)
    if not isinstance(signature, bytes) or not signature:
        raise ValueError("the card signer must return the signature's bytes")
    # A signer that can check its own work (a2a_signing's do) does, so that no
    # card is ever served with a signature that would not verify.
    check = getattr(signer, "check", None)
    if check is not None and not check(signing_input, signature):
        raise ValueError("the card signer's signature does not verify with its own public key")
    return {**card, "signatures": list(card.get("signatures") or ()) +
            [{"protected": protected, "signature": _b64url(signature)}]}


def canonicalize(value):
    """``value`` (parsed JSON) as RFC 8785 canonical JSON, UTF-8 bytes."""
    try:
        return _jcs(value).encode("utf-8")
    except ValueError as error:
        raise CardSignatureError(str(error)) from None


def card_payload(card):
    """The bytes a card's signatures sign (section 8.4.1)."""
    try:
        return _card_payload(card)
    except (ValueError, RecursionError) as error:
        raise CardSignatureError(f"the card has no canonical form: {error}") from None


def _crypto():
    try:
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils
    except ImportError:
        raise CardSignatureError("signing and verifying cards needs the cryptography package: "
                                 "pip install cryptography (in a checkout of a2a_min: pip "
                                 "install '.[signing]')") from None
    return hashes, serialization, ec, ed25519, padding, rsa, utils


# alg -> (key kind, hash, EC curve and its size in bytes)
_ALGORITHMS = {
    "ES256": ("ec", "SHA256", "secp256r1", 32),
    "ES384": ("ec", "SHA384", "secp384r1", 48),
    "RS256": ("rsa", "SHA256", None, None),
    "PS256": ("rsa-pss", "SHA256", None, None),
    "EdDSA": ("ed25519", None, None, None),
    "Ed25519": ("ed25519", None, None, None),
    **{name: ("hmac", "SHA" + name[2:], None, None) for name in _HMAC},
}


def _load_key(key, private):
    """A cryptography key from a key object, PEM (bytes or text) or a PEM file's path."""
    hashes, serialization, *_ = _crypto()
    if not isinstance(key, (bytes, str)):
        # (A private key given to verify with: its public half.)
        return key.public_key() if not private and hasattr(key, "private_bytes") else key
    data = key.encode() if isinstance(key, str) else key
    if b"-----BEGIN" not in data:
        if isinstance(key, bytes):
            raise CardSignatureError("the key is bytes but not PEM (-----BEGIN ...)")
        try:
            with open(key, "rb") as f:
                data = f.read()
        except (OSError, ValueError) as error:
            raise CardSignatureError(f"cannot read the key file {key!r}: "
                                     f"{getattr(error, 'strerror', None) or error}") from None
    try:
        if private:
            return serialization.load_pem_private_key(data, password=None)
        try:
            return serialization.load_pem_public_key(data)
        except ValueError:
            return serialization.load_pem_private_key(data, password=None).public_key()
    except (ValueError, TypeError) as error:
        raise CardSignatureError(f"not a usable PEM {'private' if private else 'public'} key: "
                                 f"{error}") from None


def _kind(key):
    """('ec', curve name) / ('rsa', bits) / ('ed25519', None), or None."""
    _, _, ec, ed25519, _, rsa, _ = _crypto()
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)):
        return "ec", key.curve.name
    if isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey)):
        return "rsa", key.key_size
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey)):
        return "ed25519", None
    return None


def _fits(alg, key):
    """Why ``key`` cannot serve ``alg``, or None."""
    want, _, curve, _ = _ALGORITHMS[alg]
    if want == "hmac":
        if isinstance(key, bytes) and b"-----BEGIN" in key:
            # A public key's PEM as an HMAC secret: anyone holding the public
            # key could sign (the algorithm confusion attack).
            return f"{alg} needs a shared secret, not a PEM key"
        return None if isinstance(key, bytes) and len(key) >= 32 else \
            f"{alg} needs a secret of 32 bytes or more"
    kind = _kind(key)
    if kind is None:
        return f"{type(key).__name__} is not a key for {alg}"
    if want == "ec" and kind != ("ec", curve):
        return f"{alg} needs an EC {curve} key, not {kind[0]} {kind[1] or ''}".rstrip()
    if want.startswith("rsa"):
        if kind[0] != "rsa":
            return f"{alg} needs an RSA key, not {kind[0]}"
        if kind[1] < 2048:
            return f"{alg} needs an RSA key of 2048 bits or more, not {kind[1]}"
    if want == "ed25519" and kind[0] != "ed25519":
        return f"{alg} needs an Ed25519 key, not {kind[0]}"
    return None


class _Signer:
    """callable(signing input) -> JWS signature bytes, with its protected ``header``."""

    def __init__(self, key, alg, header):
        self.key, self.alg, self.header = key, alg, header

    def __call__(self, data):
        hashes, _, ec, _, padding, _, utils = _crypto()
        want, digest, _, size = _ALGORITHMS[self.alg]
        if want == "ec":
            # JWS wants R || S, each as wide as the curve (RFC 7518 section 3.4), not DER.
            r, s = utils.decode_dss_signature(self.key.sign(data, ec.ECDSA(getattr(hashes, digest)())))
            return r.to_bytes(size, "big") + s.to_bytes(size, "big")
        if want == "rsa":
            return self.key.sign(data, padding.PKCS1v15(), getattr(hashes, digest)())
        if want == "rsa-pss":
            return self.key.sign(data, padding.PSS(padding.MGF1(hashes.SHA256()), 32),
                                 hashes.SHA256())
        return self.key.sign(data)

    def check(self, data, signature):
        """Whether ``signature`` verifies with this key's public half."""
        public = self.key if self.alg in _HMAC else self.key.public_key()
        return _check(self.alg, public, data, signature)


def signer_from_pem(pem, *, kid, alg=None, jku=None):
    """A card_signer for a2a_min.Server from a private key (a PEM file's path,
    PEM bytes or a cryptography key): ES256 for an EC P-256 key, ES384 for
    P-384, RS256 for RSA (2048 bits or more), EdDSA for Ed25519, unless
    ``alg`` says otherwise. ``kid`` names the key to verifiers; ``jku`` goes
    in the header only when given."""
    key = _load_key(pem, private=True)
    if alg is None:
        kind = _kind(key)
        alg = {("ec", "secp256r1"): "ES256", ("ec", "secp384r1"): "ES384"}.get(kind) or \
            {"rsa": "RS256", "ed25519": "EdDSA"}.get(kind and kind[0])
        if alg is None:
            raise CardSignatureError(f"no card signing algorithm for this key ({kind}): use an "
                                     "EC P-256, RSA or Ed25519 key")
    if alg not in _ALGORITHMS or alg in _HMAC:
        raise CardSignatureError(f"unknown signing algorithm {alg!r}; known: "
                                 f"{', '.join(a for a in _ALGORITHMS if a not in _HMAC)}")
    wrong = _fits(alg, key)
    if wrong:
        raise CardSignatureError(wrong)
    if not kid:
        raise CardSignatureError("kid is required: it tells verifiers which key to use")
    header = {"alg": alg, "kid": kid, **({"jku": jku} if jku else {})}
    return _Signer(key, alg, header)


def _unb64url(text, what):
    if not isinstance(text, str):
        raise CardSignatureError(f"{what} is not a string")
    try:
        return _b64decode(text)
    except (binascii.Error, ValueError):
        raise CardSignatureError(f"{what} is not base64url") from None


def _check(alg, key, data, signature):
    """Whether ``signature`` is alg's signature of ``data`` by ``key``."""
    hashes, _, ec, _, padding, _, utils = _crypto()
    from cryptography.exceptions import InvalidSignature
    want, digest, _, size = _ALGORITHMS[alg]
    try:
        if want == "hmac":
            import hashlib
            import hmac
            return hmac.compare_digest(hmac.new(key, data, getattr(hashlib, digest.lower()))
                                       .digest(), signature)
        if want == "ec":
            if len(signature) != 2 * size:
                raise CardSignatureError(f"an {alg} signature is {2 * size} bytes (R || S), "
                                         f"not {len(signature)}: a DER signature is not JWS")
            r, s = int.from_bytes(signature[:size], "big"), int.from_bytes(signature[size:], "big")
            key.verify(utils.encode_dss_signature(r, s), data, ec.ECDSA(getattr(hashes, digest)()))
        elif want == "rsa":
            key.verify(signature, data, padding.PKCS1v15(), getattr(hashes, digest)())
        elif want == "rsa-pss":
            key.verify(signature, data, padding.PSS(padding.MGF1(hashes.SHA256()), 32),
                       hashes.SHA256())
        else:
            key.verify(signature, data)
        return True
    except InvalidSignature:
        return False


def _stripped(value):
    """The payload older SDKs signed (a2a-python before its 2026 fix, and
    others since): every empty string, list and object removed, REQUIRED or not."""
    if isinstance(value, dict):
        kept = {k: v for k, v in ((k, _stripped(v)) for k, v in value.items()) if v is not None}
        return kept or None
    if isinstance(value, list):
        kept = [v for v in (_stripped(v) for v in value) if v is not None]
        return kept or None
    return None if value == "" else value


def _unknown_fields(card):
    """Top-level fields the proto does not define (they are not signed)."""
    known = {name for _, name, _, _ in MESSAGES["AgentCard"]}
    known |= {_snake(name) for name in known}
    return sorted(set(card) - known)


def verify_card(card, keys, algorithms=DEFAULT_ALGORITHMS, *, allow_stripped=False):
    """Check the card's signatures (section 8.4.3) with keys the caller trusts:
    ``keys`` is a dict of kid -> key (a cryptography public key, PEM, a PEM
    file's path; bytes for HMAC) or callable(kid, jku) -> key (None: no
    such key). At least one signature must hold. Returns what held:
    {"kid", "alg", "payload", "card"}: payload "section 8.4.1" or, for a
    signature over the older empty-values-stripped form, "empty values
    stripped"; card, what that signature covers (the fields the proto
    knows, camelCase; for the older form, without its empty values), which
    is the card to use: anything else in the card is unsigned. The older
    form is accepted only with ``allow_stripped=True``: under it every empty
    value is unsigned, and some mean something (``securityRequirements:
    [{}]`` is "anonymous allowed"); without it, the error says the
    signature holds only that way.
    Raises CardSignatureError naming each signature and why it failed."""
    if not isinstance(card, dict):
        raise CardSignatureError("the card is not a JSON object")
    signatures = card.get("signatures")
    if not signatures:
        raise CardSignatureError("the card has no signatures")
    if not isinstance(signatures, list):
        raise CardSignatureError("the card's signatures is not a list")
    if not (callable(keys) or isinstance(keys, dict)):
        raise CardSignatureError("keys must be a dict of kid -> key, or a callable (kid, jku)")
    allowed = {a for a in algorithms or () if isinstance(a, str)} - {"none"}
    canonical = card_payload(card)         # (CardSignatureError for a card with no canonical form)
    signed = _presence(card, "AgentCard", "card")
    stripped = _stripped(signed) or {}
    payloads = [("section 8.4.1", canonical, signed),
                ("empty values stripped", canonicalize(stripped), stripped)]
    reasons = []
    for number, entry in enumerate(signatures):
        name = f"signature {number}"
        try:
            if not isinstance(entry, dict):
                raise CardSignatureError("is not an object")
            protected = entry.get("protected")
            raw = _unb64url(protected, "its protected header")
            try:
                header = json.loads(raw.decode("utf-8"))
            except (ValueError, RecursionError):
                raise CardSignatureError("its protected header is not JSON") from None
            if not isinstance(header, dict):
                raise CardSignatureError("its protected header is not a JSON object")
            alg, kid = header.get("alg"), header.get("kid")
            if not isinstance(alg, str) or not isinstance(kid, (str, type(None))):
                raise CardSignatureError("its alg (and kid) must be strings")
            name = f"signature {number} (kid {kid!r}, alg {alg!r})"
            if alg not in _ALGORITHMS or alg not in allowed:
                raise CardSignatureError(
                    f"alg {alg!r} is not allowed (allowed: {', '.join(sorted(allowed))})")
            if header.get("crit"):
                raise CardSignatureError(f"it has critical header parameters {header['crit']} "
                                         "this verifier does not know")
            key = keys(kid, header.get("jku")) if callable(keys) else (keys or {}).get(kid)
            if key is None:
                raise CardSignatureError(f"no key for kid {kid!r}")
            if not (alg in _HMAC and isinstance(key, bytes)):
                key = _load_key(key, private=False)
            wrong = _fits(alg, key)
            if wrong:
                raise CardSignatureError(wrong)
            signature = _unb64url(entry.get("signature"), "its signature")
            for form, payload, content in payloads:
                data = f"{protected}.{_b64url(payload)}".encode("ascii")
                if not _check(alg, key, data, signature):
                    continue
                if form != "section 8.4.1" and not allow_stripped:
                    raise CardSignatureError(
                        "holds only over the older form with every empty value stripped "
                        "(a2a-sdk's before its 2026 fix; A2A#2122), not section 8.4.1's: "
                        "empty values are then unsigned; verify_card(..., "
                        "allow_stripped=True) accepts it")
                return {"kid": kid, "alg": alg, "payload": form, "card": content}
            unknown = _unknown_fields(card)
            raise CardSignatureError(
                "does not match this card: the key given for this kid is not the signer's, "
                "or the card was changed after it was signed, or signed in another "
                "canonical form" +
                (f" (fields the proto does not know, left out as unsigned: "
                 f"{', '.join(unknown)})" if unknown else ""))
        except CardSignatureError as error:
            reasons.append(f"{name}: {error}")
    raise CardSignatureError("no signature holds: " + "; ".join(reasons))
