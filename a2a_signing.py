"""a2a_signing: keys for a2a_min's signed agent cards (A2A 1.0, section 8.4).

A card may carry JWS signatures (RFC 7515) over its canonical form: the card
as the proto knows it, without ``signatures``, in RFC 8785 canonical JSON.
a2a_min.py writes that form and assembles the signature with the standard
library alone; the keys and algorithms live here, because they need the
``cryptography`` package (``pip install cryptography``, or the ``signing``
extra) and because a server answers every request without them. The caller's
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

__all__ = ["canonicalize", "card_payload", "signer_from_pem", "verify_card",
           "CardSignatureError", "DEFAULT_ALGORITHMS"]

import binascii
import json

import a2a_min

# What verify_card accepts unless told otherwise: the asymmetric algorithms a
# card is signed with. EdDSA's newer, fully specified name (RFC 9864) is Ed25519.
DEFAULT_ALGORITHMS = ("ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519")
_HMAC = ("HS256", "HS384", "HS512")


class CardSignatureError(ValueError):
    """A card whose signatures cannot be made or do not hold; the message says why."""


def canonicalize(value):
    """``value`` (parsed JSON) as RFC 8785 canonical JSON, UTF-8 bytes."""
    try:
        return a2a_min._jcs(value).encode("utf-8")
    except ValueError as error:
        raise CardSignatureError(str(error)) from None


def card_payload(card):
    """The bytes a card's signatures sign (section 8.4.1)."""
    try:
        return a2a_min._card_payload(card)
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
        return a2a_min._b64decode(text)
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
    known = {name for _, name, _, _ in a2a_min.MESSAGES["AgentCard"]}
    known |= {a2a_min._snake(name) for name in known}
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
    signed = a2a_min._presence(card, "AgentCard", "card")
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
                data = f"{protected}.{a2a_min._b64url(payload)}".encode("ascii")
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
