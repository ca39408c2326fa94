"""a2a_jwt: bearer tokens from an identity provider for a2a_min (JWT, JWKS,
OpenID Connect discovery).

A deployed agent rarely keeps a list of static tokens: an identity provider
(Keycloak, Auth0, Entra ID, Google, Cognito) hands callers signed JSON Web
Tokens (RFC 7519), and the agent checks them against the provider's public
keys (a JWKS, RFC 7517), found through OpenID Connect discovery. JwtAuth is
an ``authenticate`` hook like a2a_min.BearerAuth: the caller is the token's
``sub`` (or another claim), so per-caller tasks work as with static tokens,
on every binding (gRPC metadata included).

    auth = JwtAuth(issuer="https://id.example", audience="https://agent.example",
                   scopes={"SendMessage": ["agent:write"]})
    server = a2a_min.Server(agent, authenticate=auth)

The signatures are checked by PyJWT (``pip install 'PyJWT[crypto]'``, or the
``jwt`` extra), imported only when a JwtAuth is made: the most widely
deployed maintained JWT library for Python; it takes the allowed algorithms
per call and refuses ``none`` and an HMAC key made from a public key. The
keys are fetched here (not by PyJWT's client): HTTPS only (plain HTTP to
loopback, for tests), bounded in size and time, cached as Cache-Control
says, refetched for an unknown ``kid`` at most once a ``refresh_interval``,
in the requesting thread alone (every other request goes on with the cached
keys), and an identity provider that is down leaves the cached keys working.

What is checked (RFC 7519, RFC 8725's best current practice): the signature
with a key of the issuer's set, the algorithm fixed by that key (its
``alg``, or its type's: RS256 and PS256 for RSA, ES256 for P-256, EdDSA for
Ed25519), never by the token; ``exp`` (required), ``nbf`` and ``iat`` with a
``leeway``; ``iss``; ``aud``; the scopes an operation needs (the ``scope``
claim, space-separated, or ``scp``). The ``jku``, ``x5u`` and ``jwk``
headers name keys the token's maker chose: they are never read.

A refusal says only what RFC 6750 lets it say: 401 with ``WWW-Authenticate:
Bearer error="invalid_token"`` for any bad token (the server log, at DEBUG,
says which check failed), 403 ``insufficient_scope`` with the scopes needed.
"""

__all__ = ["JwtAuth", "InsufficientScopeError", "DEFAULT_ALGORITHMS"]

import ipaddress
import json
import threading
import time
from urllib.parse import urlsplit

import a2a_min
# The second tier (a2a_min.COMPANION_API): the log.
from a2a_min import _log

# What a key may verify, by its type, when its JWK names no ``alg`` (RFC 7518
# section 3.1, RFC 8037): asymmetric alone, so no public key is ever an HMAC secret.
DEFAULT_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
_BY_KEY_TYPE = {("RSA", None): ("RS256", "PS256"), ("EC", "P-256"): ("ES256",),
                ("OKP", "Ed25519"): ("EdDSA",)}
_LOOPBACK_NAMES = ("localhost",)


class InsufficientScopeError(a2a_min.A2AError):
    """The token is good but lacks a scope the operation needs (RFC 6750
    section 3.1, insufficient_scope): HTTP 403, gRPC PERMISSION_DENIED.
    ``challenge`` is the WWW-Authenticate value naming the scopes needed."""
    code, grpc_status, http_status, reason = -31403, "PERMISSION_DENIED", 403, "INSUFFICIENT_SCOPE"


def _jwt():
    try:
        import jwt
    except ImportError:
        raise ModuleNotFoundError(
            "JwtAuth needs PyJWT with its crypto extra: pip install 'PyJWT[crypto]' (in a "
            "checkout of a2a_min: pip install '.[jwt]')", name="jwt") from None
    return jwt


def _fetchable(url):
    """Whether keys may be fetched from ``url``: HTTPS, or HTTP to loopback."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return True
    if parts.scheme != "http" or not parts.hostname:
        return False
    if parts.hostname in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def _max_age(cache_control):
    """The max-age of a Cache-Control value (RFC 9111 section 5.2.2.1), or
    None; no-store and no-cache count as 0."""
    age = None
    for directive in (cache_control or "").lower().split(","):
        name, _, value = directive.strip().partition("=")
        if name in ("no-store", "no-cache"):
            return 0
        if name == "max-age" and value.strip().strip('"').isdigit():
            age = int(value.strip().strip('"'))
    return age


def _token_scopes(claims):
    """The scopes a token grants: ``scope`` (RFC 8693, space-separated) or
    ``scp`` (a list, as Entra ID and Okta write it, or a string)."""
    granted = claims.get("scope", claims.get("scp", ""))
    if isinstance(granted, str):
        return set(granted.split())
    if isinstance(granted, list):
        return {s for s in granted if isinstance(s, str)}
    return set()


class JwtAuth:
    """Authorization: Bearer <JWT> from an identity provider (see the module's
    docstring). ``issuer`` and ``audience`` must match the token's ``iss`` and
    ``aud``. The keys: ``jwks`` (a JWKS dict), ``keys`` (kid -> a public key:
    PEM or a cryptography key), ``jwks_uri``, or else the issuer's OpenID
    Connect discovery document. ``scopes``: the scopes every operation needs
    (a list), or operation name ("SendMessage"; "*": the others) -> scopes.
    ``principal_claim`` names the caller; ``leeway`` is the seconds of clock skew allowed;
    ``anonymous`` lets a caller without a token in, as principal None.
    ``oauth2_flows`` declares an OAuth2 scheme (with those OAuthFlows) on the
    card in place of OpenID Connect discovery. ``tls_context``: the
    ssl.SSLContext the key fetches verify with (default: the system's)."""

    def __init__(self, *, issuer, audience, jwks=None, jwks_uri=None, keys=None,
                 principal_claim="sub", leeway=30, scopes=None, algorithms=DEFAULT_ALGORITHMS,
                 anonymous=False, name="oidc", oauth2_flows=None, tls_context=None,
                 max_token_bytes=8192, max_jwks_bytes=1 << 20, fetch_timeout=5.0,
                 refresh_interval=60.0, default_max_age=300, longest_max_age=86400):
        self.jwt = _jwt()
        if not issuer or not audience:
            raise ValueError("JwtAuth needs issuer= and audience=: a token for another agent "
                             "or from another provider must not pass")
        self.issuer, self.audience = issuer, audience
        self.principal_claim, self.leeway, self.anonymous = principal_claim, leeway, anonymous
        self.algorithms = tuple(a for a in algorithms if a in DEFAULT_ALGORITHMS)
        if not self.algorithms:
            raise ValueError(f"algorithms: none of {list(algorithms)} is one JwtAuth checks "
                             f"({', '.join(DEFAULT_ALGORITHMS)})")
        def listed(names):                          # ("a b" is two scopes, as in a token)
            return tuple(names.split() if isinstance(names, str) else names or ())
        self.scopes = ({k: listed(v) for k, v in scopes.items()} if isinstance(scopes, dict)
                       else listed(scopes))
        self.tls_context, self.max_token_bytes = tls_context, max_token_bytes
        self.max_jwks_bytes, self.fetch_timeout = max_jwks_bytes, fetch_timeout
        self.refresh_interval = refresh_interval
        self.default_max_age, self.longest_max_age = default_max_age, longest_max_age
        self.discovery_url = issuer.rstrip("/") + "/.well-known/openid-configuration"
        self.jwks_uri = jwks_uri
        for url in filter(None, (jwks_uri, None if jwks or keys else self.discovery_url)):
            if not _fetchable(url):
                raise ValueError(f"{url}: keys are fetched over https only (http to loopback "
                                 "alone, for tests)")
        self.fetches = 0                           # JWKS documents fetched (for stats, tests)
        self._lock = threading.Lock()              # (held for the refresh decision alone)
        self._fetching = False
        self._fetched = threading.Event()          # (set when no fetch is running)
        self._fetched.set()
        self._fetched_at = None                    # monotonic time of the last attempt
        self._expires = 0.0
        self._static = jwks is not None or keys is not None
        self._keys = {}                            # kid -> {alg: PyJWK}, replaced whole
        if jwks is not None:
            self._keys = self._key_set(jwks)
        if keys is not None:
            self._keys = {**self._keys, **self._pem_keys(keys)}
        scheme = ({"oauth2SecurityScheme": {"flows": oauth2_flows}} if oauth2_flows else
                  {"openIdConnectSecurityScheme": {"openIdConnectUrl": self.discovery_url}})
        self.security_schemes = {name: scheme}
        # The card's securityRequirements: every scope some operation needs (a client that
        # reads the card asks its provider for them all).
        wanted = sorted({s for v in (self.scopes.values() if isinstance(self.scopes, dict)
                                     else [self.scopes]) for s in v})
        self.security_requirements = [{"schemes": {name: {"list": wanted}}}]
        self._hint = f"get a token from {issuer} for the audience {audience}"

    # -- the keys ------------------------------------------------------------------------

    def _key_set(self, jwks):
        """kid -> {alg: PyJWK} of a JWKS: the signing keys of the allowed types;
        an entry that is not one (a symmetric key, an unknown curve) is skipped."""
        found = {}
        for index, entry in enumerate((jwks or {}).get("keys") or ()):
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            kind = (entry.get("kty"), entry.get("crv") if entry.get("kty") != "RSA" else None)
            allowed = _BY_KEY_TYPE.get(kind, ())
            if entry.get("alg") is not None:
                allowed = (entry["alg"],) if entry["alg"] in allowed else ()
            made = {}
            for alg in allowed:
                if alg in self.algorithms:
                    try:
                        made[alg] = self.jwt.PyJWK(entry, algorithm=alg)
                    except (self.jwt.PyJWKError, self.jwt.InvalidKeyError, ValueError,
                            TypeError) as error:
                        _log().warning("JwtAuth: a JWKS key (kid %r) is unusable: %s",
                                       entry.get("kid"), error)
                        break
            if made:
                found[str(entry.get("kid", f"#{index}"))] = made
        return found

    def _pem_keys(self, keys):
        """kid -> {alg: PyJWK} of keys=: each public key as its JWK."""
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
        algorithms = self.jwt.algorithms
        entries = []
        for kid, key in dict(keys).items():
            if isinstance(key, str):
                key = key.encode()
            if isinstance(key, bytes):
                key = serialization.load_pem_public_key(key)
            if isinstance(key, rsa.RSAPublicKey):
                entry = algorithms.RSAAlgorithm.to_jwk(key, as_dict=True)
            elif isinstance(key, ec.EllipticCurvePublicKey):
                entry = algorithms.ECAlgorithm.to_jwk(key, as_dict=True)
            elif isinstance(key, ed25519.Ed25519PublicKey):
                entry = algorithms.OKPAlgorithm.to_jwk(key, as_dict=True)
            else:
                raise ValueError(f"keys[{kid!r}]: not an RSA, EC P-256 or Ed25519 public key")
            entry.pop("alg", None)
            entries.append({**entry, "kid": kid})
        return self._key_set({"keys": entries})

    def _get(self, url):
        """The JSON document at ``url`` and its max-age (None: not said): one
        GET, no redirect followed, at most max_jwks_bytes, in fetch_timeout."""
        import http.client
        if not _fetchable(url):
            raise OSError(f"{url} is not https (nor http to loopback)")
        parts = urlsplit(url)
        if parts.scheme == "https":
            import ssl
            connection = http.client.HTTPSConnection(
                parts.hostname, parts.port, timeout=self.fetch_timeout,
                context=self.tls_context or ssl.create_default_context())
        else:
            connection = http.client.HTTPConnection(parts.hostname, parts.port,
                                                    timeout=self.fetch_timeout)
        deadline = time.monotonic() + self.fetch_timeout
        try:
            connection.request("GET", (parts.path or "/") + ("?" + parts.query if parts.query
                                                              else ""),
                               headers={"Accept": "application/json"})
            response = connection.getresponse()
            if response.status != 200:
                raise OSError(f"{url} answered HTTP {response.status}")
            data = b""
            while len(data) <= self.max_jwks_bytes:
                if time.monotonic() > deadline:
                    raise OSError(f"{url} took longer than {self.fetch_timeout} s")
                chunk = response.read1(65536)
                if not chunk:
                    break
                data += chunk
            if len(data) > self.max_jwks_bytes:
                raise OSError(f"{url} is larger than max_jwks_bytes ({self.max_jwks_bytes})")
            return json.loads(data), _max_age(response.getheader("Cache-Control"))
        finally:
            connection.close()

    def _fetch(self):
        """Fetch the JWKS (discovering jwks_uri first, if not known): the new key
        set replaces the old whole; a failure keeps the old (and is logged)."""
        try:
            if self.jwks_uri is None:
                document, _ = self._get(self.discovery_url)
                if not isinstance(document, dict) or document.get("issuer") != self.issuer \
                        or not isinstance(document.get("jwks_uri"), str):
                    raise ValueError("the discovery document does not name this issuer and "
                                     "a jwks_uri (OpenID Connect Discovery section 4.3)")
                if not _fetchable(document["jwks_uri"]):
                    raise ValueError(f"its jwks_uri {document['jwks_uri']} is not https")
                self.jwks_uri = document["jwks_uri"]
            jwks, max_age = self._get(self.jwks_uri)
            self.fetches += 1
            if not isinstance(jwks, dict):
                raise ValueError("the JWKS is not a JSON object")
            keys = self._key_set(jwks)
            age = self.default_max_age if max_age is None else max_age
            age = max(self.refresh_interval, min(age, self.longest_max_age))
            self._keys, self._expires = keys, time.monotonic() + age
        except (OSError, ValueError) as error:       # (json's errors are ValueErrors)
            _log().warning("JwtAuth: could not fetch the keys of %s (the cached keys, %d, "
                           "stay in use): %s", self.issuer, len(self._keys), error)
        finally:
            with self._lock:
                self._fetching = False
                self._fetched.set()

    def _refresh(self, wait):
        """Refresh the keys if no fetch ran for refresh_interval and none is
        running: in this thread (``wait``: a kid not known) or another."""
        if self._static:
            return
        now = time.monotonic()
        with self._lock:
            running = self._fetching
            due = not running and (self._fetched_at is None
                                   or now - self._fetched_at >= self.refresh_interval)
            if due:
                self._fetching, self._fetched_at = True, now
                self._fetched.clear()
        if not due:
            if running and wait and not self._keys:   # (no key to check with meanwhile)
                self._fetched.wait(2 * self.fetch_timeout)
            return
        if wait:
            self._fetch()
        else:
            threading.Thread(target=self._fetch, name="a2a-jwks", daemon=True).start()

    def _key(self, kid, alg):
        """The PyJWK to check a token of (kid, alg) with, or None."""
        if not self._static and time.monotonic() >= self._expires:
            self._refresh(wait=not self._keys)     # (stale: the cached keys go on meanwhile)
        keys = self._keys
        if kid is None:
            entry = next(iter(keys.values())) if len(keys) == 1 else None
        else:
            entry = keys.get(kid)
            if entry is None:
                self._refresh(wait=True)           # (a new key: rate-limited)
                entry = self._keys.get(kid)
        return entry and entry.get(alg)

    # -- the hook ------------------------------------------------------------------------

    def _invalid(self, why):
        _log().debug("JwtAuth: token refused: %s", why)
        return a2a_min.AuthenticationRequiredError(
            f"invalid_token: the bearer token was not accepted; {self._hint}",
            challenge='Bearer realm="a2a", error="invalid_token"')

    def claims(self, token):
        """The claims of a token that passes every check, else
        AuthenticationRequiredError (invalid_token)."""
        jwt = self.jwt
        if len(token) > self.max_token_bytes or not token.isascii():
            raise self._invalid(f"longer than max_token_bytes ({self.max_token_bytes}), or "
                                "not ASCII")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise self._invalid(f"no JWS header: {error}") from None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise self._invalid(f"the algorithm {alg!r} is not allowed")
        if kid is not None and not isinstance(kid, str):
            raise self._invalid("the kid is not a string")
        key = self._key(kid, alg)
        if key is None:
            raise self._invalid(f"no key {kid!r} of the issuer verifies {alg}")
        try:
            claims = jwt.decode(
                token, key=key, algorithms=[alg], audience=self.audience, issuer=self.issuer,
                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]})
        except jwt.PyJWTError as error:
            raise self._invalid(f"{type(error).__name__}: {error}") from None
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal:
            raise self._invalid(f"no {self.principal_claim} claim (a string) names the caller")
        return claims

    def __call__(self, call):
        header = call.headers.get("authorization", "")
        kind, _, token = header.strip().partition(" ")
        token = token.strip()
        if not header.strip():
            if self.anonymous:
                return None
            raise a2a_min.AuthenticationRequiredError(
                f"missing credentials: send -H 'Authorization: Bearer <token>' ({self._hint})",
                challenge='Bearer realm="a2a"')
        if kind.lower() != "bearer" or not token:
            raise self._invalid("the Authorization header is not 'Bearer <token>'")
        claims = self.claims(token)
        needed = (self.scopes.get(call.method, self.scopes.get("*", ()))
                  if isinstance(self.scopes, dict) else self.scopes)
        missing = [s for s in needed if s not in _token_scopes(claims)]
        if missing:
            scope = " ".join(needed)
            raise InsufficientScopeError(
                f"insufficient_scope: {call.method or 'this operation'} needs the scopes "
                f"{scope}; get a token with them from {self.issuer}",
                challenge=f'Bearer realm="a2a", error="insufficient_scope", scope="{scope}"')
        return claims[self.principal_claim]
