"""Loading ACTS documents, running tests, and reporting (ACTS sections 2-9, 12, 13)."""

import json
import os
import re
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .assertions import (MISSING, AssertionFailed, check, passes, resolve, resolve_one,
                         short)
from .wire import ERRORS, STREAMING, Binding, Result, UnencodableParams, \
    normalize_jsonrpc_error, normalize_rest_error

LEVELS = ("must", "should", "may")
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED"}
# runner_requirements this runner can satisfy (auth_credentials only with the tokens given)
SUPPORTED_REQUIREMENTS = {"webhook_endpoint"}
# How long the runner waits for push deliveries after a webhook test's steps (s).
WEBHOOK_WAIT = 20.0


# ---------------------------------------------------------------- loading --

@dataclass
class Test:
    spec: dict
    suite: dict
    document: dict
    source: str
    problems: list = field(default_factory=list)

    @property
    def id(self):
        return str(self.spec.get("id"))

    @property
    def level(self):
        return self.spec.get("level")


def load(paths):
    """Tests from files or directories; `include` is followed, each file once."""
    seen, tests = set(), []

    def load_file(path):
        path = Path(path).resolve()
        if path in seen:
            return
        seen.add(path)
        with open(path, encoding="utf-8") as f:
            if path.suffix == ".json":
                doc = json.load(f)
            else:
                doc = yaml.safe_load(f)
        problems = validate_document(doc)
        if problems and not isinstance(doc, dict):
            raise SystemExit(f"{path}: {'; '.join(problems)}")
        major = str(doc.get("acts_version", "")).split(".")[0]
        if major != "1":
            raise SystemExit(f"{path}: unsupported acts_version {doc.get('acts_version')!r}")
        for name in doc.get("include") or []:
            load_file(path.parent / name)
        for suite in doc.get("suites") or []:
            for spec in suite.get("tests") or []:
                tests.append(Test(spec, suite, doc, path.name, validate_test(spec)))

    for p in paths:
        p = Path(p)
        if p.is_dir():
            master = p / "suite.acts.yaml"
            files = [master] if master.exists() else sorted(p.glob("*.acts.y*ml"))
            for f in files:
                load_file(f)
        else:
            load_file(p)
    return tests


def validate_document(doc):
    if not isinstance(doc, dict):
        return ["document root is not a map"]
    problems = []
    for key in ("acts_version", "spec_version"):
        if key not in doc:
            problems.append(f"missing {key}")
    if not doc.get("suites") and not doc.get("include"):
        problems.append("neither suites nor include")
    return problems


STEP_KINDS = ("operation", "raw", "assertion", "client_response")


def validate_test(spec):
    problems = []
    for key in ("id", "name", "level", "steps"):
        if key not in spec:
            problems.append(f"test lacks {key}")
    if spec.get("level") not in LEVELS:
        problems.append(f"bad level {spec.get('level')!r}")
    ids = set()
    for step in spec.get("steps") or []:
        if not isinstance(step, dict) or "id" not in step:
            problems.append("a step lacks id")
            continue
        if step["id"] in ids:
            problems.append(f"duplicate step id {step['id']}")
        ids.add(step["id"])
        if sum(k in step for k in STEP_KINDS) != 1:
            problems.append(f"step {step['id']}: needs exactly one of {', '.join(STEP_KINDS)}")
        if "expect" in step and "expect_error" in step:
            problems.append(f"step {step['id']}: expect and expect_error together")
    return problems


# -------------------------------------------------------------- variables --

class Unresolved(Exception):
    pass


_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")


class Context:
    def __init__(self, document, builtins):
        self.variables = dict(document.get("variables") or {})
        self.builtins = builtins
        self.captures = {}      # step id -> {name: value}
        self.responses = {}     # step id -> assertion root (or raw body)
        self.errors = {}        # step id -> (normalized error, HTTP status)

    def lookup(self, expr, depth=0):
        if "." in expr:
            step, rest = expr.split(".", 1)
            if step in self.captures:
                if rest in self.captures[step]:
                    return self.captures[step][rest]
                if rest == "response":
                    return self.responses[step]
                if rest.startswith("response."):
                    value = resolve_one(self.responses[step], rest[len("response."):])
                    if value is not MISSING:
                        return value
                raise Unresolved(f"step {step} captured no {rest!r}")
        if expr in self.variables:
            value = self.variables[expr]
            return self.interpolate(value, depth + 1) if depth < 5 else value
        if expr.startswith("env."):
            if expr[4:] in os.environ:
                return os.environ[expr[4:]]
            raise Unresolved(f"environment variable {expr[4:]} is not set")
        if expr == "$uuid":
            return str(uuid.uuid4())
        if expr in self.builtins:
            return self.builtins[expr]
        raise Unresolved(f"variable {{{{{expr}}}}} is not defined")

    def interpolate(self, value, depth=0):
        if isinstance(value, str):
            whole = _PLACEHOLDER.fullmatch(value.strip())
            if whole:
                return self.lookup(whole.group(1), depth)
            return _PLACEHOLDER.sub(lambda m: str(self.lookup(m.group(1), depth)), value)
        if isinstance(value, list):
            return [self.interpolate(v, depth) for v in value]
        if isinstance(value, dict):
            return {self.interpolate(k, depth) if isinstance(k, str) else k:
                    self.interpolate(v, depth) for k, v in value.items()}
        return value


# ---------------------------------------------------------------- results --

class StepFailed(Exception):
    def __init__(self, step_id, message, failure=None, unresolved=False):
        self.step_id = step_id
        self.unresolved = unresolved
        self.failure = failure
        super().__init__(message)


class Skipped(Exception):
    pass


@dataclass
class Outcome:
    test: Test
    result: str                 # pass / fail / skip / error
    message: str = ""
    step_id: str | None = None
    duration_ms: int = 0
    notes: list = field(default_factory=list)
    failure: AssertionFailed | None = None
    tags: set = field(default_factory=set)


# ----------------------------------------------------------------- runner --

class Runner:
    def __init__(self, binding: Binding, card, sut_url, hoist=True, stream_timeout=30.0,
                 fill_raw_message_id=False, message_id_from_text=False, client=None,
                 webhook=None, tokens=None, webhook_wait=WEBHOOK_WAIT,
                 infer_streaming=False, auth_raw=False, hoist_raw=False,
                 auth_precondition="schemes"):
        self.hoist_raw = hoist_raw
        self.auth_precondition = auth_precondition  # schemes | required
        self.auth_raw = auth_raw        # --auth-raw: credentials on raw steps of non-auth tests
        self.infer_streaming = infer_streaming  # --infer-streaming-precondition
        self.fill_raw_message_id = fill_raw_message_id
        self.client = client            # ClientHarness (section 10), or None: client tests skip
        self.webhook = webhook          # webhook.Receiver, or None: webhook tests skip
        self.tokens = dict(tokens or {})  # auth / insufficient / other: --*-token
        self.webhook_wait = webhook_wait
        self.extra_vars = {}
        self.message_id_from_text = message_id_from_text
        self.binding = binding
        self.card = card if isinstance(card, dict) else {}
        self.sut_url = sut_url
        self.hoist = hoist
        self.stream_timeout = stream_timeout

    # -- applicability ----------------------------------------------------
    def skip_reason(self, test):
        spec = test.spec
        transports = spec.get("transport")
        if transports and self.binding.transport not in transports:
            return f"test is for {'/'.join(transports)} only"
        steps = spec.get("steps") or []
        if any("client_response" in s for s in steps):
            if self.client is None:
                return "client test (ACTS section 10): run once, with the jsonrpc transport " \
                       "(its payloads are JSON-RPC envelopes and cards)"
            return None
        supported = set(SUPPORTED_REQUIREMENTS)
        if self.tokens.get("auth") or self.tokens.get("insufficient"):
            supported.add("auth_credentials")
        missing = [r for r in spec.get("runner_requirements") or [] if r not in supported]
        if missing:
            return f"runner cannot satisfy runner_requirements {missing}"
        if self.webhook is None and uses_variable(spec, "webhookUrl") and \
                "runner-special" in self.tags(test):
            return "runner-special: needs the webhook receiver (--no-webhook given)"
        pre = spec.get("preconditions") or {}
        caps = self.card.get("capabilities") or {}
        if self.infer_streaming and "streaming" not in (pre.get("capabilities") or {}) and \
                expects_stream(spec) and caps.get("streaming") is not True:
            return "streaming test without a streaming precondition, card says streaming " \
                   "is not true (--infer-streaming-precondition; spec 3.3.4)"
        for name, wanted in (pre.get("capabilities") or {}).items():
            have = caps.get(name, MISSING)
            if name == "authentication" and have is MISSING:
                # Not an AgentCapabilities field: the card declares authentication
                # through non-empty securitySchemes (spec 4.5, 8.3); with
                # --auth-precondition required, only when it also requires one
                # (non-empty securityRequirements: callers without credentials
                # are refused).
                have = bool(self.card.get("securitySchemes"))
                if self.auth_precondition == "required":
                    have = have and bool(self.card.get("securityRequirements") or
                                         self.card.get("security"))
            if have is MISSING and isinstance(wanted, bool):
                have = False
            if have != wanted:
                shown = "absent" if have is MISSING else json.dumps(have)
                return f"precondition capabilities.{name}={json.dumps(wanted)} not met " \
                       f"(card: {shown})"
        if pre.get("transport") and self.binding.transport not in pre["transport"]:
            return f"precondition transport {pre['transport']} not met"
        skill_ids = {s.get("id") for s in self.card.get("skills") or [] if isinstance(s, dict)}
        for skill in pre.get("skills") or []:
            if skill.get("id") not in skill_ids:
                return f"precondition skill {skill.get('id')!r} not in card"
        ext_uris = {e.get("uri") for e in caps.get("extensions") or [] if isinstance(e, dict)}
        for uri in pre.get("extensions") or []:
            if uri not in ext_uris:
                return f"precondition extension {uri} not in card"
        return None

    @staticmethod
    def tags(test):
        return set(test.spec.get("tags") or []) | set(test.suite.get("tags") or [])

    def runner_variables(self, test, outcome):
        """Values the runner provides (ACTS 3.2 runner_requirements): webhookUrl
        (this runner's receiver, replacing a document's placeholder so that the
        SUT never delivers anywhere but 127.0.0.1), insufficientAuthToken,
        otherUserTaskId (a task made as another user before the test)."""
        values = {}
        spec = test.spec
        if uses_variable(spec, "webhookUrl"):
            # Never the document's placeholder (https://example.com/...): without a
            # receiver, a closed port on 127.0.0.1.
            values["webhookUrl"] = self.webhook.new_url(test.id) if self.webhook is not None \
                else "http://127.0.0.1:9/acts-no-receiver"
            if "webhookUrl" in (test.document.get("variables") or {}):
                outcome.notes.append("webhookUrl: the runner's receiver on 127.0.0.1 replaces "
                                     "the document's placeholder URL")
        if self.tokens.get("insufficient"):
            values["insufficientAuthToken"] = self.tokens["insufficient"]
        if (uses_variable(spec, "otherUserTaskId") or SAME_ERROR.get(test.id, ()) is None) \
                and self.tokens.get("other"):
            other = self.binding.with_token(self.tokens["other"])
            try:
                result = other.call("send_message", {"message": {
                    "messageId": self.new_message_id({"parts": [{"text": "tck-complete-task"}]}),
                    "role": "ROLE_USER", "parts": [{"text": "tck-complete-task as another user"}]}})
            finally:
                other.close()
            task_id = resolve_one(result.root, "task.id") if result.error is None else MISSING
            if task_id is MISSING:
                why = result.error["name"] if result.error else short(result.root, 100)
                raise StepFailed(None, f"runner setup: could not create a task as the other user "
                                       f"(--other-auth-token): {why}")
            values["otherUserTaskId"] = task_id
            outcome.notes.append(f"otherUserTaskId: task {task_id} created with "
                                 "--other-auth-token (tck-complete-task)")
        return values

    # -- one test ----------------------------------------------------------
    def run(self, test):
        started = time.monotonic()
        outcome = Outcome(test, "pass")
        outcome.tags = self.tags(test)
        try:
            if test.problems:
                raise StepFailed(None, "invalid test: " + "; ".join(test.problems))
            reason = self.skip_reason(test)
            if reason:
                raise Skipped(reason)
            tags = set(test.spec.get("tags") or [])
            webhook_test = uses_variable(test.spec, "webhookUrl")
            if "runner-special" in tags and not webhook_test and test.id not in SAME_ERROR:
                outcome.notes.append("runner-special: only the declared steps were checked")
            ctx = Context(test.document, {"SUT_BASE_URL": self.sut_url,
                                          "baseUrl": self.sut_url})
            ctx.variables.update(self.extra_vars)
            ctx.variables.update(self.runner_variables(test, outcome))
            for step in test.spec["steps"]:
                self.run_step(step, ctx, outcome)
            for assertion in test.spec.get("assertions") or []:
                self.named_assertion(assertion, ctx, "(test assertions)")
            if "runner-special" in self.tags(test) and "webhookUrl" in ctx.variables and \
                    self.webhook is not None:
                self.check_deliveries(test, ctx, outcome)
            if test.id in SAME_ERROR:
                self.check_same_error(test, ctx, outcome)
        except Skipped as skip:
            outcome.result, outcome.message = "skip", str(skip)
        except StepFailed as failed:
            outcome.result, outcome.message = "fail", str(failed)
            if failed.unresolved and "runner-special" in set(test.spec.get("tags") or []):
                outcome.result = "skip"
                outcome.message = f"runner-special: needs a runner-provided value ({failed})" \
                                  "; supply it with --var NAME=VALUE"
            outcome.step_id, outcome.failure = failed.step_id, failed.failure
            if test.problems:
                outcome.result = "error"
        except UnencodableParams as exc:
            outcome.result, outcome.message = "skip", f"not expressible over gRPC: {exc}"
        except Exception as exc:        # a runner bug or an unreachable SUT
            outcome.result, outcome.message = "error", f"{type(exc).__name__}: {exc}"
        outcome.duration_ms = int((time.monotonic() - started) * 1000)
        return outcome

    # -- steps ------------------------------------------------------------
    def run_step(self, step, ctx, outcome):
        sid = step["id"]
        try:
            if "assertion" in step:
                self.named_assertion(step["assertion"], ctx, sid)
                return
            if step.get("delay_ms"):
                time.sleep(step["delay_ms"] / 1000)
            repeat = step.get("repeat")
            attempts = int(repeat.get("max_attempts", 10)) if repeat else 1
            for attempt in range(1, attempts + 1):
                result, raw = self.execute(step, ctx, outcome)
                if not repeat:
                    break
                last = until_holds(repeat["until"], result.body if raw else result.root)
                if last is True:
                    break
                if attempt == attempts:
                    raise StepFailed(sid, f"step {sid}: repeat.until {repeat['until']!r} not "
                                          f"met after {attempts} attempts (last: {short(last)})")
                time.sleep(backoff(repeat, attempt))
            if result.error is not None:
                ctx.errors[sid] = (result.error, result.http_status)
            ctx.responses[sid] = result.body if raw else (
                result.root if result.error is None else {"error": result.error["wire"]})
            ctx.captures.setdefault(sid, {})
            self.verify(step, result, raw, ctx)
            for name, path in (step.get("capture") or {}).items():
                value = resolve_one(ctx.responses[sid], path)
                if value is MISSING:
                    raise StepFailed(sid, f"step {sid}: capture {name}: nothing at {path!r}")
                ctx.captures[sid][name] = value
            for assertion in step.get("assertions") or []:
                self.named_assertion(assertion, ctx, sid)
        except Unresolved as exc:
            raise StepFailed(sid, f"step {sid}: unresolved variable: {exc}", unresolved=True)
        except AssertionFailed as failure:
            raise StepFailed(sid, f"step {sid}: {failure.describe()}", failure)

    def execute(self, step, ctx, outcome):
        timeout = self.stream_timeout
        if step.get("expect_stream", {}).get("timeout_ms"):
            timeout = step["expect_stream"]["timeout_ms"] / 1000
        if "client_response" in step:
            return self.execute_client(step, ctx), False
        if "raw" in step and self.binding.transport == "grpc":
            raise Skipped("raw HTTP wire step: HTTP-specific, not run over gRPC")
        if "raw" in step:
            raw = ctx.interpolate(step["raw"])
            headers = {str(k): str(v) for k, v in (raw.get("headers") or {}).items()}
            if self.auth_raw and self.tokens.get("auth") and "auth" not in outcome.tags and \
                    not any(k.lower() == "authorization" for k in headers):
                headers["Authorization"] = f"Bearer {self.tokens['auth']}"
                note = "--auth-raw: the runner's credentials added to a raw step"
                if note not in outcome.notes:
                    outcome.notes.append(note)
            if "body_raw" in raw:
                body = raw["body_raw"]
            elif "body" in raw:
                payload = raw["body"]
                if self.fill_raw_message_id:
                    payload = self.fill_message_id(payload, outcome)
                if self.hoist_raw:
                    payload = self.hoist_raw_ids(payload, outcome)
                body = json.dumps(payload)
            else:
                body = None
            result = self.binding.http.request(raw.get("method", "GET"), raw.get("path", "/"),
                                               headers, body, stream_timeout=timeout)
            result.request = raw
            result.raw_events = result.events
            result.error = raw_error(result)
            return result, True
        operation = step["operation"]
        params = self.keep_push_local(ctx.interpolate(step.get("params") or {}), ctx, outcome)
        if operation in ("send_message", "send_streaming_message") and \
                isinstance(params.get("message"), dict):
            message = params["message"] = dict(params["message"])
            message.setdefault("messageId", self.new_message_id(message))
            for key in ("taskId", "contextId"):
                if key in params and self.hoist:
                    if key not in message:
                        message[key] = params[key]
                    del params[key]
                    note = "moved params.taskId/contextId into params.message (corpus " \
                           "puts them beside the message)"
                    if note not in outcome.notes:
                        outcome.notes.append(note)
        return self.binding.call(operation, params, stream_timeout=timeout), False

    def keep_push_local(self, params, ctx, outcome):
        """A webhook URL written literally in a test (CORE-CAP-001 has
        https://example.com/...) becomes the runner's receiver (or a closed port
        on 127.0.0.1): the server under test is never sent anywhere else."""
        def fix(holder):
            url = holder.get("url") if isinstance(holder, dict) else None
            if isinstance(url, str) and urllib.parse.urlsplit(url).hostname != "127.0.0.1":
                local = ctx.variables.get("webhookUrl")
                if not (isinstance(local, str) and local.startswith("http://127.0.0.1:")):
                    local = self.webhook.new_url("literal") if self.webhook is not None \
                        else "http://127.0.0.1:9/acts-no-receiver"
                holder["url"] = local
                outcome.notes.append(f"push URL {url} replaced by {local} (127.0.0.1 only)")
        if not isinstance(params, dict):
            return params
        params = json.loads(json.dumps(params))
        for holder in (params, params.get("pushNotificationConfig"),
                       (params.get("configuration") or {}).get("taskPushNotificationConfig")
                       if isinstance(params.get("configuration"), dict) else None):
            if isinstance(holder, dict) and ("url" in holder) and (
                    holder is not params or "taskId" in params):
                fix(holder)
        return params

    def new_message_id(self, message):
        """A fresh UUID (ACTS 4.3); with --message-id-from-text (a diagnostic, not
        ACTS) the first word of the first text part prefixes it, so a server that
        steers by messageId (the a2a-tck convention) sees the ACTS behaviour."""
        if self.message_id_from_text:
            parts = message.get("parts") or [{}]
            text = parts[0].get("text") if isinstance(parts[0], dict) else None
            if isinstance(text, str) and text.startswith("tck-"):
                return f"{text.split()[0]}-{uuid.uuid4()}"
        return str(uuid.uuid4())

    def hoist_raw_ids(self, payload, outcome):
        """--hoist-raw: a raw JSON-RPC SendMessage body's params.taskId /
        params.contextId moved into params.message, as --hoist (the default)
        does for abstract operations."""
        params = payload.get("params") if isinstance(payload, dict) else None
        if not isinstance(params, dict) or not isinstance(params.get("message"), dict) or \
                not ({"taskId", "contextId"} & set(params)):
            return payload
        payload = json.loads(json.dumps(payload))
        params = payload["params"]
        for key in ("taskId", "contextId"):
            if key in params:
                params["message"].setdefault(key, params.pop(key))
        outcome.notes.append("--hoist-raw: params.taskId/contextId moved into params.message")
        return payload

    def fill_message_id(self, payload, outcome):
        """--fill-raw-message-id: give a raw body's message a messageId when it lacks one."""
        if not isinstance(payload, dict):
            return payload
        holder = payload.get("params") if isinstance(payload.get("params"), dict) else payload
        message = holder.get("message")
        if isinstance(message, dict) and "messageId" not in message:
            payload = json.loads(json.dumps(payload))
            holder = payload.get("params") if isinstance(payload.get("params"), dict) else payload
            holder["message"]["messageId"] = self.new_message_id(holder["message"])
            outcome.notes.append("raw body lacked message.messageId; the runner added one")
        return payload

    # -- expectations -----------------------------------------------------
    def execute_client(self, step, ctx):
        from .client import ParseFailed
        spec = ctx.interpolate(step["client_response"])
        try:
            parsed = self.client.parse(spec.get("operation"), spec.get("wire_payload"))
        except ParseFailed as exc:
            raise StepFailed(step["id"], f"step {step['id']}: {exc}")
        return Result(http_status=200, body=parsed, root=parsed)

    def check_same_error(self, test, ctx, outcome):
        """Runner-special SEC-AUTH-003 / CORE-ERR-009 (spec 13.1: a resource the
        caller may not see is reported exactly like one that does not exist):
        GetTask of another user's task and of a missing task answer the same
        error, status and message (the ids masked)."""
        sid = "(same error)"
        steps = SAME_ERROR[test.id]
        if steps is None:                  # CORE-ERR-009: the runner adds the other call
            if "otherUserTaskId" not in ctx.variables:
                outcome.notes.append("runner-special: no --other-auth-token, so the missing "
                                     "task's error was not compared with another user's task's")
                return
            other = self.binding.call("get_task", {"id": ctx.variables["otherUserTaskId"]})
            if other.error is None:
                raise StepFailed(sid, "GetTask of another user's task succeeded "
                                      f"({short(other.root, 100)})")
            ctx.errors["(other user's task)"] = (other.error, other.http_status)
            steps = ("(other user's task)", "get-missing")
        (a, a_status), (b, b_status) = (ctx.errors.get(steps[0], (None, None)),
                                        ctx.errors.get(steps[1], (None, None)))
        if a is None or b is None:
            raise StepFailed(sid, f"expected errors from {steps[0]} and {steps[1]}")

        def masked(e):
            text = str(e.get("message"))
            for value in ctx.variables.values():
                if isinstance(value, str) and len(value) > 8:
                    text = text.replace(value, "<id>")
            return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>",
                          text)
        if (a["name"], a_status, a.get("reason")) != (b["name"], b_status, b.get("reason")):
            raise StepFailed(sid, f"{steps[0]} answered {a['name']} (status {a_status}), "
                                  f"{steps[1]} {b['name']} (status {b_status}): distinguishable")
        if masked(a) != masked(b):
            raise StepFailed(sid, f"messages differ: {short(a.get('message'), 80)} vs "
                                  f"{short(b.get('message'), 80)}")
        outcome.notes.append(f"runner-special: both answered {a['name']} (status {a_status})")

    def check_deliveries(self, test, ctx, outcome):
        """Runner-special push tests (tags runner-special, using {{webhookUrl}}):
        after the steps, wait for the SUT's deliveries to the receiver until one
        carries a terminal state (or WEBHOOK_WAIT passes), then check what the
        tests' descriptions ask of them: at least one delivery (at-least-once);
        each a JSON StreamResponse with exactly one payload, about the task the
        test made (payload format); when the config had `authentication`, its
        scheme and credentials in the Authorization header (auth included)."""
        url = ctx.variables["webhookUrl"]
        configs = []
        for step in test.spec["steps"]:
            if step.get("operation") in ("set_push_notification_config", "create_push_config",
                                         "create_push_notification_config"):
                configs.append(ctx.interpolate(step.get("params") or {}))
        task_ids = {c.get("taskId") for c in configs if c.get("taskId")}

        def terminal(deliveries):
            return any(delivery_state(d["body"]) in TERMINAL for d in deliveries)
        deliveries = self.webhook.wait(url, terminal, self.webhook_wait)
        sid = "(webhook)"
        if not deliveries:
            raise StepFailed(sid, f"webhook: no push notification reached the receiver within "
                                  f"{self.webhook_wait:.0f}s (task(s) {sorted(task_ids)})")
        outcome.notes.append(f"webhook: {len(deliveries)} delivery(ies), states "
                             f"{[delivery_state(d['body']) for d in deliveries]}")
        for i, d in enumerate(deliveries):
            body = d["body"]
            kinds = [k for k in WIRE_KINDS if isinstance(body, dict) and k in body]
            if len(kinds) != 1:
                raise StepFailed(sid, f"webhook: delivery {i} is not a StreamResponse with one "
                                      f"payload (keys {sorted(body) if isinstance(body, dict) else type(body).__name__}):"
                                      f" {short(d['text'], 120)}")
            payload = body[kinds[0]]
            tid = payload.get("id") if kinds[0] == "task" else payload.get("taskId")
            if task_ids and tid not in task_ids:
                raise StepFailed(sid, f"webhook: delivery {i} is about task {tid!r}, not "
                                      f"{sorted(task_ids)}")
            ctype = d["headers"].get("content-type", "")
            if "json" not in ctype:
                raise StepFailed(sid, f"webhook: delivery {i} Content-Type {ctype!r}")
        for config in configs:
            auth = (config.get("pushNotificationConfig") or config).get("authentication")
            if isinstance(auth, dict) and auth.get("credentials"):
                want = f"{auth.get('scheme', 'Bearer')} {auth['credentials']}"
                for i, d in enumerate(deliveries):
                    got = d["headers"].get("authorization")
                    if got is None or got.lower() != want.lower():
                        raise StepFailed(sid, f"webhook: delivery {i} Authorization "
                                              f"{got!r}, expected {want!r} (the config's "
                                              "authentication)")
        if not terminal(deliveries):
            outcome.notes.append("webhook: no delivery with a terminal state within "
                                 f"{self.webhook_wait:.0f}s")

    def verify(self, step, result, raw, ctx):
        sid = step["id"]
        if "expect_parsed" in step:
            check(result.root, ctx.interpolate(step["expect_parsed"]), "parsed")
        if "expect_error" in step:
            self.verify_error(sid, ctx.interpolate(step["expect_error"]), result)
        if "expect_stream" in step:
            self.verify_stream(sid, ctx.interpolate(step["expect_stream"]), result, raw)
        if "expect" in step:
            self.verify_expect(sid, ctx.interpolate(step["expect"]), result, raw)

    def verify_error(self, sid, spec, result):
        error = result.error
        if error is None:
            if result.events is not None:
                got = f"an event stream of {len(result.events)} event(s)"
            else:
                got = f"success {short(result.root if result.root is not MISSING else result.body, 120)}"
            expected = spec.get("error_type", spec.get("code", "an error"))
            raise StepFailed(sid, f"step {sid}: expected error {short(expected)}, got {got}")
        type_spec = spec.get("error_type", spec.get("code"))
        if type_spec is not None:
            if isinstance(type_spec, str) and type_spec not in ERRORS:
                raise StepFailed(sid, f"step {sid}: unknown error type {type_spec!r}")
            failure = passes(error["name"], type_spec, "error")
            if failure:
                raise StepFailed(sid, f"step {sid}: wrong error: expected {short(type_spec)}, "
                                      f"got {error['name']} (code {error['code']}, message "
                                      f"{short(error['message'], 100)})", failure)
        if "message" in spec:
            check(error["message"], spec["message"], "error.message")
        for key in ("details", "data"):
            if key in spec:
                check(error["data"], spec[key], f"error.{key}")

    def verify_expect(self, sid, spec, result, raw):
        if not isinstance(spec, dict):
            raise StepFailed(sid, f"step {sid}: expect is not a map")
        if "status" in spec or "body" in spec:
            status = spec.get("status", MISSING)
            body = dict(spec.get("body") or {}) if isinstance(spec.get("body"), dict) \
                else spec.get("body", MISSING)
            extra = {k: v for k, v in spec.items() if k not in ("status", "body")}
            if extra:
                body = {**(body if isinstance(body, dict) else {}), **extra}
        else:
            status, body = MISSING, spec
        if not raw and result.error is not None and status != "error" and \
                not (isinstance(body, dict) and "error" in body):
            raise StepFailed(sid, f"step {sid}: operation failed with {result.error['name']}"
                                  f" (HTTP {result.http_status}): "
                                  f"{short(result.error['message'], 160)}")
        if status == "error":
            if result.error is None:
                raise StepFailed(sid, f"step {sid}: expected an error, got success "
                                      f"{short(result.root, 120)}")
        elif status is not MISSING:
            check(result.http_status, status, "http.status")
        if body is MISSING or body is None:
            return
        if raw:
            root = result.body
            if result.events is not None:
                root = {"events": result.events}
        elif result.error is not None:
            root = {"error": result.error["wire"]}
        elif result.events is not None:
            root = {"events": result.events}
        else:
            root = result.root
        if isinstance(body, dict) and not body:
            return
        check(root, body, "")

    def verify_stream(self, sid, spec, result, raw):
        if result.error is not None and not raw:
            raise StepFailed(sid, f"step {sid}: expected a stream, got error {result.error['name']}"
                                  f": {short(result.error['message'], 120)}")
        if result.events is None:
            raise StepFailed(sid, f"step {sid}: response is not an event stream (HTTP "
                                  f"{result.http_status}, Content-Type "
                                  f"{result.headers.get('content-type')!r}, body "
                                  f"{short(result.text, 100)})")
        if result.stream_error:
            raise StepFailed(sid, f"step {sid}: {result.stream_error} "
                                  f"({len(result.events)} event(s) received)")
        events = result.raw_events if raw else result.events
        n = len(events)
        if "min_count" in spec and n < spec["min_count"]:
            raise StepFailed(sid, f"step {sid}: stream has {n} event(s), min_count "
                                  f"{spec['min_count']}: kinds {event_kinds(events)}")
        if "max_count" in spec and n > spec["max_count"]:
            raise StepFailed(sid, f"step {sid}: stream has {n} event(s), max_count "
                                  f"{spec['max_count']}")
        if spec.get("ordering") == "monotonic_state":
            check_monotonic(sid, [unwrap_event(e) if raw else e for e in events])
        views = [event_view(e) for e in events]
        for i, assertion in enumerate(spec.get("events") or []):
            assertion = dict(assertion)
            description = assertion.pop("description", None) or f"events[{i}]"
            mode = assertion.pop("match", "exact_position")
            index = assertion.pop("index", i)
            spec_ = assertion
            if mode == "any_position":
                failures = [passes(v, spec_, f"event[{j}]") for j, v in enumerate(views)]
                if not views or all(failures):
                    last = failures[-1].describe() if failures else "stream is empty"
                    raise StepFailed(sid, f"step {sid}: no event matches {description!r}: {last}"
                                          f"; kinds {event_kinds(events)}")
            else:
                if index >= n:
                    raise StepFailed(sid, f"step {sid}: no event at index {index} ({description})")
                failure = passes(views[index], spec_, f"event[{index}]")
                if failure:
                    raise StepFailed(sid, f"step {sid}: {description}: {failure.describe()}",
                                     failure)
        if "final_event" in spec:
            if not views:
                raise StepFailed(sid, f"step {sid}: stream is empty, final_event asserted")
            failure = passes(views[-1], spec["final_event"], f"event[{n - 1}](final)")
            if failure:
                raise StepFailed(sid, f"step {sid}: final_event: {failure.describe()}", failure)
        if "each_event" in spec:
            for j, view in enumerate(views):
                failure = passes(view, spec["each_event"], f"event[{j}]")
                if failure:
                    raise StepFailed(sid, f"step {sid}: each_event: {failure.describe()}", failure)

    # -- named / inline assertions (5.5) -----------------------------------
    def named_assertion(self, assertion, ctx, sid):
        label = assertion.get("id") or assertion.get("description") or "assertion"
        try:
            source = ctx.interpolate(assertion.get("source"))
        except Unresolved as exc:
            raise StepFailed(sid, f"step {sid}: {label}: unresolved source: {exc}")
        value = source
        if assertion.get("path"):
            value = resolve_one(source, assertion["path"])
        if "match" in assertion:
            failure = passes(value, ctx.interpolate(assertion["match"]), assertion.get("path", ""))
            if failure:
                raise StepFailed(sid, f"step {sid}: {label}: {failure.describe()}", failure)
        for mode in ("any", "all", "none"):
            if mode not in assertion:
                continue
            coll = ctx.interpolate(assertion[mode])
            elements = resolve(value, coll["path"])
            results = [passes(e, coll.get("match", {}), f"{coll['path']}#{i}")
                       for i, e in enumerate(elements)]
            ok = {"any": any(r is None for r in results),
                  "all": all(r is None for r in results),
                  "none": not any(r is None for r in results)}[mode]
            if not ok:
                detail = next((r.describe() for r in results if r is not None), "")
                raise StepFailed(sid, f"step {sid}: {label}: `{mode}` over {coll['path']} "
                                      f"({len(elements)} element(s)) failed for "
                                      f"{short(coll.get('match'), 100)}"
                                      + (f"; e.g. {detail}" if detail else ""))


# ----------------------------------------------------------------- helpers --

WIRE_KINDS = {"task": "task", "message": "message", "statusUpdate": "status_update",
              "artifactUpdate": "artifact_update"}


def unwrap_event(event):
    if isinstance(event, dict) and isinstance(event.get("result"), dict):
        return event["result"]
    return event


def event_view(event):
    """The event as the corpus asserts it: the wire StreamResponse, its payload
    under the ACTS snake_case kind name, and the payload's fields at the top."""
    if not isinstance(event, dict):
        return event
    view = dict(event)
    inner = event.get("result") if isinstance(event.get("result"), dict) else event
    for wire, snake in WIRE_KINDS.items():
        if isinstance(inner.get(wire), dict):
            view.setdefault(snake, inner[wire])
            view.setdefault(wire, inner[wire])
            for k, v in inner[wire].items():
                view.setdefault(k, v)
    return view


# Runner-special checks by test id: the two steps whose errors must be the same
# (None: the runner makes the other-user call itself).
SAME_ERROR = {"SEC-AUTH-003": ("get-other-user-task", "get-missing-task"),
              "CORE-ERR-009": None}


def delivery_state(body):
    if not isinstance(body, dict):
        return None
    for key in ("task", "statusUpdate"):
        if isinstance(body.get(key), dict):
            return (body[key].get("status") or {}).get("state")
    return None


def expects_stream(spec):
    """The test reads a stream: an expect_stream step, or a streaming operation
    not expected to fail."""
    for step in spec.get("steps") or []:
        if "expect_stream" in step:
            return True
        expect = step.get("expect") if isinstance(step.get("expect"), dict) else {}
        if step.get("operation") in STREAMING and "expect_error" not in step and \
                "error" not in expect and expect.get("status") != "error":
            return True
    return False


def uses_variable(spec, name):
    return re.search(r"\{\{\s*" + re.escape(name) + r"\s*\}\}", json.dumps(spec)) is not None


def event_kinds(events):
    kinds = []
    for e in events:
        e = unwrap_event(e)
        kinds.append(next((k for k in WIRE_KINDS if isinstance(e, dict) and k in e), "?"))
    return kinds


def event_state(event):
    if not isinstance(event, dict):
        return None
    for key in ("task", "statusUpdate"):
        if isinstance(event.get(key), dict):
            return (event[key].get("status") or {}).get("state")
    return None


def check_monotonic(sid, events):
    previous = None
    for i, event in enumerate(events):
        state = event_state(event)
        if state is None:
            continue
        if previous is not None:
            if previous in TERMINAL and state != previous:
                raise StepFailed(sid, f"step {sid}: ordering: {previous} -> {state} at event "
                                      f"{i} (terminal state left)")
            if state == "TASK_STATE_SUBMITTED" and previous != "TASK_STATE_SUBMITTED":
                raise StepFailed(sid, f"step {sid}: ordering: {previous} -> SUBMITTED at "
                                      f"event {i}")
        previous = state


def raw_error(result):
    body = result.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and "jsonrpc" in body:
        return normalize_jsonrpc_error(body["error"])
    if result.http_status >= 400:
        return normalize_rest_error(result)
    return None


_UNTIL = re.compile(r"^\s*(\S+)\s*(==|!=|\bin\b)\s*(.+?)\s*$")


def until_holds(expression, root):
    """True when the condition holds, else the value seen at the path."""
    m = _UNTIL.match(expression)
    if not m:
        raise StepFailed(None, f"cannot parse repeat.until {expression!r}")
    path, op, literal = m.groups()
    try:
        expected = yaml.safe_load(literal)
    except yaml.YAMLError:
        expected = literal.strip("'\"")
    actual = resolve_one(root, path) if root is not MISSING else MISSING
    if op == "==":
        ok = actual == expected
    elif op == "!=":
        ok = actual != expected
    else:
        ok = isinstance(expected, list) and actual in expected
    return True if ok else actual


def backoff(repeat, attempt):
    delay = repeat.get("delay_ms", 1000) / 1000
    mode = repeat.get("backoff", "none")
    if mode == "linear":
        return delay * attempt
    if mode == "exponential":
        return delay * 2 ** (attempt - 1)
    return delay


def summarize(outcomes):
    by_level = {lvl: {"total": 0, "passed": 0, "failed": 0, "skipped": 0, "errors": 0}
                for lvl in LEVELS}
    key = {"pass": "passed", "fail": "failed", "skip": "skipped", "error": "errors"}
    for o in outcomes:
        row = by_level.setdefault(o.test.level or "?", {"total": 0, "passed": 0, "failed": 0,
                                                         "skipped": 0, "errors": 0})
        row["total"] += 1
        row[key[o.result]] += 1
    return by_level
