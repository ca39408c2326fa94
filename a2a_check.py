"""a2a_check: a quick conformance check of any A2A 1.0 agent, from the outside.

    python a2a_min.py check http://127.0.0.1:8000/ [--full] [--auth TOKEN]
    python a2a_min.py check http://127.0.0.1:8000/.well-known/ai-catalog.json   (each agent)

or from a program::

    import a2a_check
    failed = a2a_check.check("http://127.0.0.1:8000/")     # prints the report

Built on a2a_client.py (the caller's side) and on the specification only:
each check says PASS, FAIL, WARN or SKIP, with the section it holds the agent
to. It is for the person deploying or debugging an agent (its own audience:
a program that calls agents imports a2a_client and never needs this).

MIT License. Copyright (c) 2026 the a2a_min authors.
"""

__all__ = ["check", "CHECK_TIMEOUT"]

import io
import json
import sys
import time
from urllib.parse import quote, urljoin, urlsplit

import a2a_min
from a2a_min import A2AError
from a2a_client import (Client, ClientError, _Connections, _Printable, _allowed,
                        _credentials, _curl_printer, _event_state, _fix_url, _is_local, _major,
                        _origin, _text, _tls_flags, fetch_card, verify)


# -- check URL: a quick conformance check of any A2A 1.0 agent ---------------------------
#
# Built on the client, from the specification only: each check says PASS,
# FAIL, WARN (the specification leaves it open, or it is a risk rather than
# an error) or SKIP (the agent does not offer it), with the section it holds
# the agent to, and for a FAIL the curl line that shows it. By default one
# message is sent (one task made); --full sends three more (streaming, and
# ListTasks' order and paging). The exit status is 1 if anything FAILed.

_CARD_REQUIRED = ("name", "description", "version", "supportedInterfaces", "capabilities",
                  "defaultInputModes", "defaultOutputModes", "skills")
_SKILL_REQUIRED = ("id", "name", "description", "tags")
_TASK_STATES = tuple(a2a_min.ENUMS["TaskState"][1:])


class _Check:
    """The checks' shared state: where to print, what was seen, the verdicts.
    Every request, the raw ones included, carries what the client's carry:
    the credentials (``auth``), the TLS files, ``headers``; and the curl line
    that reproduces a FAIL names them (the secret as $A2A_AUTH)."""

    def __init__(self, url, out, timeout, tls, auth, headers=None, show_secrets=False,
                 allow_hosts=()):
        self.url, self.out, self.timeout, self.tls, self.auth = url, out, timeout, tls, auth
        self.allow_hosts, self.where = list(allow_hosts), None
        self.extra_headers = dict(headers or {})
        self.headers = dict(self.extra_headers, **_credentials({}, auth)) \
            if isinstance(auth, str) else dict(self.extra_headers)
        self.needs = None                          # why the agent's calls cannot be made
        self.failed = 0
        self.requests = io.StringIO()              # the curl line of each request, as sent
        secrets = {name: "A2A_AUTH" for name in _credentials({}, auth)} \
            if isinstance(auth, str) else {}
        self.curl = _curl_printer(secrets, show_secrets, self.requests, _tls_flags(tls))

    def say(self, verdict, section, what, detail="", reproduce=None):
        self.failed += verdict == "FAIL"
        print(f"{verdict:<4}  §{section:<7} {what}" + (f": {detail}" if detail else ""),
              file=self.out)
        if verdict == "FAIL":
            lines = [reproduce] if reproduce else \
                self.requests.getvalue().strip().splitlines()
            if lines:
                print(f"      reproduce: {lines[-1]}", file=self.out)
        self.requests.seek(0)
        self.requests.truncate()

    def client(self, card, binding):
        return Client(card, binding=binding, auth=self.auth, on_request=self.curl, tls=self.tls,
                      timeout=self.timeout, headers=self.extra_headers, card_url=self.where,
                      allow_hosts=self.allow_hosts)

    def raw(self, method, url, body=None, headers=None):
        """(status, head, parsed JSON or None) of one request, sent as it is
        (with the credentials and headers every request of the check carries)."""
        headers = {"Content-Type": "application/json", **self.headers, **(headers or {})}
        if self.where and _origin(url) != _origin(self.where) and not _allowed(self.allow_hosts,
                                                                                  url):
            # (credentials only to the origin the user named, as the Client sends them)
            secret = {"authorization", "cookie", "proxy-authorization"} | {
                name.lower() for name in self.headers if name not in self.extra_headers}
            headers = {k: v for k, v in headers.items() if k.lower() not in secret}
        conns = _Connections(self.timeout, tls=self.tls)
        try:
            status, head, data = conns.request(method, url, body, headers, on_request=self.curl)
        finally:
            conns.close()
        try:
            return status, head, json.loads(data)
        except ValueError:
            return status, head, None


CHECK_TIMEOUT = 10.0        # check's --timeout: seconds for each request (a stream: three times)


def check(url, *, out=None, full=False, timeout=CHECK_TIMEOUT, tls=None, auth=None, keys=None,
          headers=None, show_secrets=False, allow_hosts=()):
    """Check the agent at ``url`` against A2A 1.0; returns the number of FAILs.
    ``auth``, ``tls`` and ``headers`` as for Client: every request carries
    them (credentials only to the card's origin and ``allow_hosts``, as for
    Client). ``keys`` (kid -> public key, as for Client's card_keys): the card's
    signatures must verify with them."""
    out = out if isinstance(out, _Printable) else _Printable(out or sys.stdout)
    if urlsplit(url).path.endswith(AI_CATALOG_PATH):
        return _check_catalog(url, out, timeout, tls, dict(
            full=full, timeout=timeout, tls=tls, auth=auth, keys=keys, headers=headers,
            show_secrets=show_secrets, allow_hosts=allow_hosts))
    run = _Check(url, out, timeout, tls, auth, headers, show_secrets, allow_hosts)
    run.keys = keys
    try:
        card, where = fetch_card(url, timeout=timeout, on_request=run.curl,
                                 headers=run.extra_headers, _http=_Connections(timeout, tls=tls))
    except A2AError as error:
        run.say("FAIL", "8.2", "the agent card", error.message)
    else:
        run.card_curl = run.requests.getvalue().strip().splitlines()[-1:] or [None]
        run.where = where
        if callable(auth):
            run.headers.update(_credentials(card, auth))
        run.needs = _needs(card, auth, tls)
        _check_agent(run, card, where, full)
    print(f"{run.failed} failed" if run.failed else "no failures", file=out)
    return run.failed


# check CATALOG_URL: a host's AI Catalog (/.well-known/ai-catalog.json, the
# catalog a2a_catalog.py serves) lists its agents; each A2A agent card listed
# by URL is checked as ``check`` checks one agent, under a heading naming it.

AI_CATALOG_PATH = "/.well-known/ai-catalog.json"
_CARD_TYPE = "application/a2a-agent-card+json"


def _check_catalog(url, out, timeout, tls, options):
    """Check every agent the AI Catalog at ``url`` lists; the FAILs of all."""
    conns = _Connections(timeout, tls=tls)
    try:
        status, head, data = conns.request("GET", url, None, dict(options["headers"] or {}))
        catalog = json.loads(data) if status == 200 else None
    except (A2AError, ClientError, ValueError) as error:
        status, catalog = getattr(error, "message", str(error)), None
    finally:
        conns.close()
    entries = catalog.get("entries") if isinstance(catalog, dict) else None
    if not isinstance(entries, list) or not isinstance(catalog.get("specVersion"), str):
        print(f"FAIL  AI catalog  {url}: not an AI Catalog (an object with specVersion and "
              f"entries), answered {status}\n1 failed", file=out)
        return 1
    agents = [e for e in entries if isinstance(e, dict) and e.get("type") == _CARD_TYPE]
    print(f"PASS  AI catalog  {len(entries)} entries, {len(agents)} A2A agent cards", file=out)
    failed = 0
    for entry in agents:
        print(f"\n== {entry.get('identifier')}: {entry.get('url', '(inline)')}", file=out)
        if not isinstance(entry.get("url"), str):
            print("SKIP  an inline card (data): check its agent by its URL", file=out)
            continue
        failed += check(urljoin(url, entry["url"]), out=out, **options)
    print(f"\n{len(agents)} agents: " + (f"{failed} failed" if failed else "no failures"),
          file=out)
    return failed


def _needs(card, auth, tls):
    """What the card asks for that the check was not given (a line saying
    how to give it), or None: an agent whose every call needs credentials
    cannot be checked past its card without them."""
    schemes = card.get("securitySchemes") or {}
    requirements = card.get("securityRequirements")
    if requirements is None:
        requirements = [{"schemes": {name: {}}} for name in schemes]
    if not isinstance(requirements, list) or not requirements or any(
            isinstance(r, dict) and not r.get("schemes") for r in requirements):
        return None                                # none asked for, or anonymous allowed
    has_cert = tls is not None and bool(getattr(tls, "a2a_files", {}).get("cert"))
    wanted = []
    for requirement in requirements:
        names = list((requirement.get("schemes") if isinstance(requirement, dict) else None)
                     or ())
        kinds = [next(iter(schemes.get(n) or {"?": 0})) for n in names]
        if all((k == "mtlsSecurityScheme" and has_cert) or
               (k != "mtlsSecurityScheme" and auth is not None) for k in kinds):
            return None                            # this requirement can be met
        for name, kind in zip(names, kinds):
            if kind == "mtlsSecurityScheme":
                wanted.append(f"a client certificate ({name}): --cert FILE --key FILE")
            elif kind == "httpAuthSecurityScheme":
                how = (schemes[name][kind] or {}).get("scheme", "Bearer").capitalize()
                wanted.append(f"{how} credentials ({name}): --auth '{how} <token>'")
            elif kind == "apiKeySecurityScheme":
                header = (schemes[name][kind] or {}).get("name", "X-API-Key")
                wanted.append(f"an API key ({name}): --auth '{header}: <key>'")
            else:
                wanted.append(f"credentials ({name}, {kind}): --auth 'Bearer <token>'")
    return "; or ".join(dict.fromkeys(wanted))


def _refused_for_credentials(run, status, answer):
    """Whether a raw request of the check was refused for its credentials
    (HTTP 401, or JSON-RPC's -31401), when the check has none to give."""
    if run.needs is None:
        return False
    error = answer.get("error") if isinstance(answer, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return status == 401 or code == a2a_min.AuthenticationRequiredError.code


def _check_agent(run, card, where, full):
    _check_card(run, card, where)
    _check_card_caching(run, where)
    if run.needs is not None:
        print(f"this agent needs credentials: {run.needs} (what needs them is skipped)",
              file=run.out)
    bindings = {i.get("protocolBinding"): i for i in card.get("supportedInterfaces") or ()
                if _major(i.get("protocolVersion")) == "1"}
    if "JSONRPC" in bindings:
        _check_jsonrpc(run, _fix_url(bindings["JSONRPC"]["url"], where),
                       bindings["JSONRPC"].get("tenant"))
    first = next((b for b in ("JSONRPC", "HTTP+JSON") if b in bindings), None)
    if first is None:
        run.say("SKIP", "5", "the operations", "no JSON-RPC or HTTP+JSON 1.0 interface")
        return
    if run.needs is not None:
        run.say("SKIP", "3.1", "the operations (SendMessage, GetTask, ListTasks, CancelTask, "
                "push configs; HTTP+JSON's error table" + (", streaming, ListTasks' order"
                                                           if full else "") + ")",
                "no credentials")
        return
    task = _check_operations(run, card, first)
    if "HTTP+JSON" in bindings:
        rest = bindings["HTTP+JSON"]              # (a tenant's routes are under /{tenant})
        _check_rest(run, card, _fix_url(rest["url"], where).rstrip("/") + (
            "/" + quote(rest["tenant"], safe="") if rest.get("tenant") else ""), task)
    if full:
        _check_streaming(run, card, first)
        _check_order(run, card, first)


def _check_card(run, card, where):
    missing = [f for f in _CARD_REQUIRED if card.get(f) in (None, "", [])
               and not (f == "skills" and "skills" in card) and f != "capabilities"]
    missing += ["capabilities"] if not isinstance(card.get("capabilities"), dict) else []
    run.say("FAIL" if missing else "PASS", "4.4.1", "the card's required fields",
            f"missing {', '.join(missing)}" if missing else "")
    for skill in card.get("skills") or ():
        gone = [f for f in _SKILL_REQUIRED if not skill.get(f)]
        if gone:
            run.say("FAIL", "4.4.5", f"skill {skill.get('id')!r}", f"missing {', '.join(gone)}")
    origin = urlsplit(where)
    for iface in card.get("supportedInterfaces") or ():
        target = urlsplit(iface.get("url", "") if "://" in iface.get("url", "")
                          else "grpc://" + iface.get("url", ""))
        if not all(iface.get(f) for f in ("url", "protocolBinding", "protocolVersion")):
            run.say("FAIL", "4.4.6", "an interface", f"needs url, protocolBinding and "
                    f"protocolVersion: {json.dumps(iface)[:120]}")
        elif (target.hostname or "") in ("0.0.0.0", "::"):
            run.say("WARN", "8.3.1", f"{iface['protocolBinding']} interface {iface['url']}",
                    "a wildcard address a server listens on, not one a client can connect to: "
                    "set the public URL (a2a_min: --public-url)")
        elif _is_local(target.hostname or "") and _is_local(origin.hostname or "") and \
                (target.port or 0) != (origin.port or 0) and target.scheme in ("http", "https"):
            run.say("WARN", "8.3.1", f"{iface['protocolBinding']} interface {iface['url']}",
                    f"another port than the card's ({origin.netloc}): the server's public URL "
                    "(a2a_min: --public-url) may not match where it listens")
        elif _is_local(target.hostname or "") and not _is_local(origin.hostname or ""):
            run.say("WARN", "8.3.1", f"{iface['protocolBinding']} interface {iface['url']}",
                    "a local address in a card served from elsewhere: clients cannot reach it")
        elif origin.scheme == "https" and target.scheme == "http":
            run.say("WARN", "7.1", f"{iface['protocolBinding']} interface {iface['url']}",
                    "plain http in a card served over https")
    if "protocolVersion" in card:
        run.say("WARN", "4.4.1", "the card has a top-level protocolVersion",
                "a 0.3-era field (1.0 names the version per interface)")
    if "security" in card and "securityRequirements" not in card:
        run.say("WARN", "4.4.1", "the card names its security requirements `security`",
                "the name of an early sample card; the proto's is securityRequirements")
    _check_signatures(run, card)


def _check_signatures(run, card):
    """Section 8.4: each signature's protected header names alg and kid (and
    typ JOSE); with keys, one signature verifies."""
    signatures = card.get("signatures")
    if not signatures:
        if run.keys:
            run.say("FAIL", "8.4.3", "the card's signatures", "keys were given (--card-key) "
                    "but the card is not signed")
        return
    for number, entry in enumerate(signatures if isinstance(signatures, list) else [None]):
        try:
            header = json.loads(a2a_min._b64decode(entry["protected"]))
            missing = [f for f in ("alg", "kid") if not header.get(f)]
        except (TypeError, KeyError, ValueError):
            header, missing = {}, ["a readable protected header"]
        if missing:
            run.say("FAIL", "8.4.2", f"signature {number}", f"needs {', '.join(missing)}")
        elif header.get("typ") not in (None, "JOSE"):
            run.say("WARN", "8.4.2", f"signature {number}", f"typ {header['typ']!r}; the "
                    "specification says JOSE (SHOULD)")
    if not run.keys:
        run.say("WARN", "8.4.3", "the card's signatures", "present, not verified: give the "
                "signer's public key with --card-key KID=FILE")
        return
    try:
        held = verify(card, run.keys, allow_stripped=True)      # (to say so: a WARN below)
    except ClientError as error:
        run.say("FAIL", "8.4.3", "the card's signatures verify", error.message,
                reproduce=getattr(run, "card_curl", [None])[0])
        return
    if held["payload"] == "section 8.4.1":
        run.say("PASS", "8.4.3", "the card's signatures verify", f"kid {held['kid']}, "
                f"{held['alg']}")
    else:
        run.say("WARN", "8.4.1", "the card's signature verifies only over the older "
                "empty-values-stripped form", f"kid {held['kid']}: REQUIRED fields at their "
                "default were left out of what was signed")


def _check_card_caching(run, where):
    """Section 8.6: the card SHOULD come with Cache-Control max-age and an
    ETag, and a conditional request with that ETag gets 304."""
    try:
        status, head, _ = run.raw("GET", where)
        tag = head.getheader("ETag")
        control = (head.getheader("Cache-Control") or "").lower()
        missing = [name for name, there in (("Cache-Control max-age", "max-age" in control),
                                            ("ETag", tag)) if not there]
        if not missing:
            status, _, _ = run.raw("GET", where, headers={"If-None-Match": tag})
    except A2AError as error:
        run.say("FAIL", "8.6", "the card's caching headers", error.message)
        return
    if missing:
        run.say("WARN", "8.6", "the card's caching headers", f"no {' and no '.join(missing)} "
                "(SHOULD): clients cannot tell when to read it again")
    else:
        run.say("PASS" if status == 304 else "WARN", "8.6", "the card's caching headers, and "
                "304 for its ETag", "" if status == 304 else f"If-None-Match got HTTP {status}")


def _check_jsonrpc(run, url, tenant=None):
    tenant = {"tenant": tenant} if tenant else {}      # (the interface's, in each request)
    cases = (("-32700", "9.5", "invalid JSON is a parse error", b"{", {"A2A-Version": "1.0"}),
             ("-32600", "9.5", "a request without a method is invalid",
              b'{"jsonrpc":"2.0","id":1}', {"A2A-Version": "1.0"}),
             ("-32601", "9.5", "an unknown method is not found",
              b'{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod","params":{}}',
              {"A2A-Version": "1.0"}),
             ("-32009", "3.6.2", "an unsupported A2A-Version is refused",
              b'{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}',
              {"A2A-Version": "99.0"}))
    for code, section, what, body, headers in cases:
        try:
            status, _, answer = run.raw("POST", url, body, headers)
        except A2AError as error:
            run.say("FAIL", section, what, error.message)
            continue
        if _refused_for_credentials(run, status, answer):
            run.say("SKIP", section, what, "no credentials")
            continue
        got = (answer or {}).get("error", {}).get("code") if isinstance(answer, dict) else None
        run.say("PASS" if str(got) == code else "FAIL", section, what,
                "" if str(got) == code else f"expected error {code}, got "
                + (f"error {got}" if got is not None else json.dumps(answer)[:100]))
    try:
        status, _, answer = run.raw("POST", url, json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "GetTask",
            "params": {"id": "a2a-check-no-such-task", **tenant}}).encode(), {"A2A-Version": "1.0"})
        if _refused_for_credentials(run, status, answer):
            run.say("SKIP", "9.5", "an A2A error's data carries an ErrorInfo", "no credentials")
            return
        error = answer.get("error") if isinstance(answer, dict) else None
        infos = _error_info(error, "JSONRPC")
        good = ("TASK_NOT_FOUND", "a2a-protocol.org") in infos
        run.say("PASS" if good else "FAIL", "9.5", "an A2A error's data carries an ErrorInfo "
                "(TASK_NOT_FOUND, domain a2a-protocol.org)", "" if good else
                f"got {json.dumps(error)[:140]}")
    except A2AError as error:
        run.say("FAIL", "9.5", "an A2A error's data carries an ErrorInfo", error.message)
    try:
        status, _, answer = run.raw("POST", url, json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": tenant}).encode())
        if _refused_for_credentials(run, status, answer):
            run.say("SKIP", "3.6.2", "a request without A2A-Version", "no credentials")
            return
        refused = isinstance(answer, dict) and "error" in answer
        run.say("PASS" if refused else "WARN", "3.6.2", "a request without A2A-Version",
                "" if refused else "answered; the specification reads no header as 0.3")
    except A2AError as error:
        run.say("FAIL", "3.6.2", "a request without A2A-Version", error.message)


def _check_operations(run, card, binding):
    """SendMessage, GetTask (and a missing task), ListTasks, CancelTask of a
    finished task: one message. Returns the task (or None)."""
    client = run.client(card, binding)
    try:
        answer = client.send("a2a_min check: hello")
    except A2AError as error:
        run.say("FAIL", "3.1.1", f"SendMessage ({binding})", error.message)
        return None
    task = answer.get("task")
    if task is None:
        ok = isinstance(answer.get("message"), dict)
        run.say("PASS" if ok else "FAIL", "3.1.1", f"SendMessage ({binding})",
                "answered a Message" if ok else f"neither task nor message: {str(answer)[:100]}")
        return None
    state = (task.get("status") or {}).get("state")
    good = task.get("id") and task.get("contextId") and state in _TASK_STATES
    run.say("PASS" if good else "FAIL", "3.1.1", f"SendMessage ({binding})",
            f"task {task.get('id')} {state}" if good else f"a task needs id, contextId and a "
            f"status.state; got {json.dumps(task)[:120]}")
    if state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED"):
        why = _text(((task.get("status") or {}).get("message") or {}).get("parts") or ())
        run.say("WARN", "3.1.1", "the agent's task ended " + state[11:].lower(),
                (why or "no reason given")[:160] + ": the protocol held, the agent did not")
    for what, section, call, expect in (
            ("GetTask reads it back", "3.1.3", lambda: client.get_task(task["id"]), None),
            ("GetTask of a missing task", "3.1.3",
             lambda: client.get_task("a2a-check-no-such-task"), a2a_min.TaskNotFoundError),
            ("ListTasks lists it", "3.1.4", lambda: client.list_tasks(pageSize=50), None)):
        try:
            got = call()
        except A2AError as error:
            ok = expect is not None and isinstance(error, expect)
            run.say("PASS" if ok else "FAIL", section, what, "" if ok else error.message)
            continue
        if expect is not None:
            run.say("FAIL", section, what, f"expected {expect.__name__}, got an answer")
        elif "tasks" in got:
            found = any(t.get("id") == task["id"] for t in got.get("tasks") or ())
            run.say("PASS" if found else "WARN", section, what,
                    "" if found else "not in the first 50 (tasks may be scoped, or many)")
            _check_list_shape(run, got)
        else:
            run.say("PASS" if got.get("id") == task["id"] else "FAIL", section, what,
                    "" if got.get("id") == task["id"] else f"got {str(got)[:100]}")
    try:
        bare = client.get_task(task["id"], history_length=0)
        run.say("PASS" if "history" not in bare else "FAIL", "3.2.4", "GetTask with "
                "historyLength 0 leaves the history out", "" if "history" not in bare else
                f"{len(bare['history'])} messages came")
    except A2AError as error:
        run.say("FAIL", "3.2.4", "GetTask with historyLength 0", error.message)
    _check_capabilities(run, card, client, task, state)
    if (card.get("capabilities") or {}).get("pushNotifications"):
        _check_push(run, client, task)
    if state in _TERMINAL:
        try:
            client.cancel_task(task["id"])
            run.say("FAIL", "3.1.5", "CancelTask of a finished task",
                    "answered; expected TaskNotCancelableError")
        except a2a_min.TaskNotCancelableError:
            run.say("PASS", "3.1.5", "CancelTask of a finished task")
        except A2AError as error:
            run.say("FAIL", "3.1.5", "CancelTask of a finished task",
                    f"expected TaskNotCancelableError, got {type(error).__name__}: {error.message}")
    else:
        run.say("SKIP", "3.1.5", "CancelTask of a finished task", f"the task is {state}")
    return task


def _check_list_shape(run, answer):
    """ListTasks' answer (section 3.1.4): nextPageToken always there ("" on
    the last page), pageSize and totalSize, no artifacts unless asked for."""
    missing = [f for f in ("nextPageToken", "pageSize", "totalSize") if f not in answer]
    run.say("FAIL" if missing else "PASS", "3.1.4", "ListTasks answers nextPageToken, pageSize "
            "and totalSize", f"missing {', '.join(missing)}" if missing else "")
    with_artifacts = [t.get("id") for t in answer.get("tasks") or () if "artifacts" in t]
    run.say("FAIL" if with_artifacts else "PASS", "3.1.4", "ListTasks leaves artifacts out "
            "unless includeArtifacts", f"{len(with_artifacts)} tasks carry them"
            if with_artifacts else "")


def _check_capabilities(run, card, client, task, state):
    """What the card says it cannot do is refused with the error the
    specification names (section 3.3.4, capability validation)."""
    capabilities = card.get("capabilities") or {}
    probes = []
    if not capabilities.get("pushNotifications"):
        probes.append(("3.1.9", "push configs, which the card says it does not send",
                       lambda: client.list_push_configs(task["id"]),
                       a2a_min.PushNotificationNotSupportedError))
    if not capabilities.get("extendedAgentCard"):
        probes.append(("3.1.11", "GetExtendedAgentCard, which the card does not offer",
                       client.extended_card, a2a_min.UnsupportedOperationError))
    if capabilities.get("streaming") and state in _TERMINAL:
        def subscribe():
            with client.subscribe(task["id"]) as stream:
                return list(stream)
        probes.append(("3.1.6", "SubscribeToTask of a finished task", subscribe,
                       a2a_min.UnsupportedOperationError))
    for section, what, call, expected in probes:
        try:
            call()
            run.say("FAIL", section, what, f"answered; expected {expected.__name__}")
        except expected:
            run.say("PASS", section, what)
        except A2AError as error:
            run.say("FAIL", section, what, f"expected {expected.__name__}, got "
                    f"{type(error).__name__}: {error.message}")


_TERMINAL = a2a_min.TERMINAL_STATES

# A webhook URL that reaches no one: no resolver answers for .invalid (RFC 6761
# section 6.4), and the round trip registers it on a task that has ended.
_NOWHERE = "https://a2a-check.invalid/webhook"


def _check_push(run, client, task):
    """The push config round trip (sections 3.1.7 to 3.1.10): create, get,
    list, delete (twice: it is idempotent), then get finds nothing."""
    steps = (
        ("3.1.7", "CreateTaskPushNotificationConfig",
         lambda: client.create_push_config(task["id"], _NOWHERE, token="a2a-check"),
         lambda got: got.get("url") == _NOWHERE and got.get("id")),
        ("3.1.8", "GetTaskPushNotificationConfig reads it back",
         lambda: client.get_push_config(task["id"], made["id"]),
         lambda got: got.get("url") == _NOWHERE and got.get("id") == made["id"]),
        ("3.1.9", "ListTaskPushNotificationConfigs lists it",
         lambda: client.list_push_configs(task["id"]),
         lambda got: any(c.get("id") == made["id"] for c in got.get("configs") or ())),
        ("3.1.10", "DeleteTaskPushNotificationConfig",
         lambda: client.delete_push_config(task["id"], made["id"]), lambda got: True),
        ("3.1.10", "DeleteTaskPushNotificationConfig again (it is idempotent)",
         lambda: client.delete_push_config(task["id"], made["id"]), lambda got: True))
    made = {}
    for section, what, call, good in steps:
        try:
            got = call()
        except A2AError as error:
            run.say("FAIL", section, what, f"{type(error).__name__}: {error.message}")
            return
        if section == "3.1.7" and isinstance(got, dict):
            made.update(got)
        ok = isinstance(got, dict) and good(got)
        run.say("PASS" if ok else "FAIL", section, what, "" if ok else f"got {str(got)[:120]}")
        if not ok:
            return
    try:
        client.get_push_config(task["id"], made["id"])
        run.say("FAIL", "3.1.8", "a deleted config is gone", "GetTaskPushNotificationConfig "
                "still answers it")
    except a2a_min.TaskNotFoundError:
        run.say("PASS", "3.1.8", "a deleted config is gone")
    except A2AError as error:
        run.say("FAIL", "3.1.8", "a deleted config is gone", f"expected TaskNotFoundError, "
                f"got {type(error).__name__}: {error.message}")


def _error_info(error, shape):
    """(A2A error code or HTTP status, the ErrorInfo reasons and domains) of an
    error object, in the binding's shape: JSON-RPC's data, or google.rpc.Status's details."""
    details = (error or {}).get("data" if shape == "JSONRPC" else "details")
    infos = [d for d in details if isinstance(d, dict) and str(d.get("@type", "")).endswith(
        "google.rpc.ErrorInfo")] if isinstance(details, list) else []
    return [(d.get("reason"), d.get("domain")) for d in infos]


# HTTP+JSON's status table (sections 5.4 and 11.6), row by row: what is sent,
# and the HTTP status, google.rpc.Code name and ErrorInfo reason that must come
# back. {task} is the finished task of the check; None rows need none.
_REST_ERRORS = (
    ("a missing task", "GET", "/tasks/a2a-check-no-such-task", None, {}, 404, "NOT_FOUND",
     "TASK_NOT_FOUND"),
    ("CancelTask of a finished task", "POST", "/tasks/{task}:cancel", b"{}", {}, 400,
     "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
    ("an unsupported A2A-Version", "GET", "/tasks", None, {"A2A-Version": "99.0"}, 400,
     "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
    ("a pageSize out of range", "GET", "/tasks?pageSize=500", None, {}, 400,
     "INVALID_ARGUMENT", None),
    ("invalid JSON", "POST", "/message:send", b"{", {}, 400, "INVALID_ARGUMENT", None))


def _check_rest(run, card, base, task):
    base = base.rstrip("/")
    for what, verb, path, body, headers, code, name, reason in _REST_ERRORS:
        if "{task}" in path and (task is None or (task.get("status") or {}).get("state")
                                 not in _TERMINAL):
            continue
        title = f"HTTP+JSON errors: {what} is {code} {name}" + \
            (f" with ErrorInfo {reason}" if reason else "")
        try:
            status, head, answer = run.raw(verb, base + path.replace(
                "{task}", (task or {}).get("id", "")), body, {"A2A-Version": "1.0", **headers})
        except A2AError as error:
            run.say("FAIL", "11.6", title, error.message)
            continue
        error = answer.get("error") if isinstance(answer, dict) else None
        kind = (head.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if kind == "application/problem+json" or (isinstance(answer, dict) and
                                                  "title" in answer and "status" in answer):
            run.say("WARN", "11.6", title, f"HTTP {status} as problem+json, the form section "
                    "6's examples show; section 11.6 asks for google.rpc.Status")
            continue
        reasons = [r for r, _ in _error_info(error, "HTTP+JSON")]
        good = status == code and isinstance(error, dict) and error.get("code") == code and \
            error.get("status") == name and (reason is None or reason in reasons)
        run.say("PASS" if good else "FAIL", "11.6", title, "" if good else
                f"got HTTP {status}: {json.dumps(answer)[:140]}")
    if task is not None and (task.get("status") or {}).get("state") in _TERMINAL:
        _check_subscribe_verbs(run, base, task)
    if task is not None:
        try:
            seen = run.client(card, "HTTP+JSON").get_task(task["id"])
            same = seen.get("id") == task["id"]
            run.say("PASS" if same else "FAIL", "5.1", "one task, seen over a second binding",
                    "" if same else f"HTTP+JSON answered {str(seen)[:100]}")
        except A2AError as error:
            run.say("FAIL", "5.1", "one task, seen over a second binding", error.message)


def _check_subscribe_verbs(run, base, task):
    """SubscribeToTask over HTTP+JSON: the proto says GET, the specification's
    table POST (A2A-FACTS, the decisions). Either may be all an agent
    serves; a finished task is refused with UnsupportedOperationError
    either way, unless the route itself is missing."""
    missing = []
    for verb in ("GET", "POST"):
        try:
            status, _, _ = run.raw(verb, f"{base}/tasks/{task['id']}:subscribe",
                                   b"{}" if verb == "POST" else None,
                                   {"A2A-Version": "1.0", "Accept": "text/event-stream"})
        except A2AError as error:
            run.say("FAIL", "11.3", f"{verb} /tasks/{{id}}:subscribe", error.message)
            return
        if status in (404, 405):
            missing.append(f"{verb} (HTTP {status})")
    run.say("WARN" if missing else "PASS", "11.3", "SubscribeToTask by GET and by POST",
            f"{', '.join(missing)} not served: the proto says GET, the specification's table "
            "POST; clients use either" if missing else "")


def _check_streaming(run, card, binding):
    if not (card.get("capabilities") or {}).get("streaming"):
        run.say("SKIP", "3.1.2", "SendStreamingMessage", "the card does not declare streaming")
        return
    try:
        with run.client(card, binding).stream("a2a_min check: stream") as stream:
            stream.until = time.monotonic() + 3 * run.timeout   # keep-alives may never end
            events = [(stream.last_event_id, event) for event in stream]
    except A2AError as error:
        run.say("FAIL", "3.1.2", "SendStreamingMessage", error.message)
        return
    first = events[0][1] if events else {}
    good = events and ("task" in first or "message" in first)
    run.say("PASS" if good else "FAIL", "3.1.2", "SendStreamingMessage starts with the task",
            f"{len(events)} events" if good else f"first event: {str(first)[:100]}")
    if good:
        ids = [event_id for event_id, _ in events if event_id is not None]
        run.say("PASS" if ids else "WARN", "3.5.2", "stream events carry SSE ids", "" if ids
                else "none: a client that loses the stream cannot resume it (Last-Event-ID)")
    if good and "task" in first:
        last = _event_state(events[-1][1])
        ended = last in _STREAM_ENDS
        run.say("PASS" if ended else "FAIL", "3.1.2", "the stream ends with the task's end",
                last or "no state")


_STREAM_ENDS = a2a_min.TERMINAL_STATES | a2a_min.INTERRUPTED_STATES


def _check_order(run, card, binding):
    client = run.client(card, binding)
    try:
        ids, context = [], None
        for i in range(2):                         # (a second apart: timestamps may be in s)
            if ids:
                time.sleep(1.05)
            task = client.send(f"a2a_min check: order {i}", context_id=context).get("task") or {}
            ids.append(task.get("id"))
            context = context or task.get("contextId")
        # (in their own context: a task of an earlier check that changed meanwhile is newer)
        page = client.list_tasks(pageSize=1, contextId=context)
        listed = [t.get("id") for t in page.get("tasks") or ()]
        run.say("PASS" if listed == ids[-1:] else "FAIL", "3.1.4",
                "ListTasks: newest first, pageSize honoured", "" if listed == ids[-1:] else
                f"asked 1, got {listed}; the newest is {ids[-1]}")
        token = page.get("nextPageToken")
        if not token:
            run.say("FAIL", "3.1.4", "ListTasks: a nextPageToken while more remain")
            return
        second = [t.get("id") for t in client.list_tasks(pageSize=1, pageToken=token,
                                                         contextId=context)
                  .get("tasks") or ()]
        run.say("PASS" if second == ids[:1] else "FAIL", "3.1.4", "ListTasks: the next page",
                "" if second == ids[:1] else f"got {second}, expected {ids[:1]}")
    except A2AError as error:
        run.say("FAIL", "3.1.4", "ListTasks order and paging", error.message)
