"""The ACTS assertion grammar (ACTS section 5) and dot-paths (5.2, 5.5, 9.1)."""

import re

MISSING = object()          # marks "the field is not present"

OPERATORS = {
    "type", "exists", "absent", "contains", "matches", "starts_with", "ends_with",
    "gte", "lte", "gt", "lt", "count", "count_gte", "count_lte", "one_of",
    "all_of", "any_of", "not",
    # not in the CDDL grammar, but the corpus uses it on arrays:
    # a list applies positionally, a map applies to every element.
    "items",
}


class AssertionFailed(Exception):
    def __init__(self, path, message, expected=None, actual=MISSING):
        self.path = path or "$"
        self.message = message
        self.expected = expected
        self.actual = actual
        super().__init__(self.describe())

    def describe(self):
        text = f"{self.path}: {self.message}"
        if self.expected is not None:
            text += f" (expected {short(self.expected)}"
            text += ", field absent)" if self.actual is MISSING else f", got {short(self.actual)})"
        elif self.actual is not MISSING:
            text += f" (got {short(self.actual)})"
        return text


def short(value, limit=160):
    text = "<absent>" if value is MISSING else repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_operator_map(spec):
    """A map is an assertion object when every key is an operator. A key named
    `type` whose value is not a type name is a field called "type" instead."""
    if not isinstance(spec, dict) or not spec:
        return False
    if not all(k in OPERATORS for k in spec):
        return False
    if "type" in spec and not isinstance(spec["type"], str):
        return False
    return True


def json_type(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def join(path, key):
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def check(actual, spec, path=""):
    """Raise AssertionFailed unless `actual` (MISSING when absent) satisfies `spec`."""
    if is_operator_map(spec):
        for op, arg in spec.items():
            check_operator(actual, op, arg, path)
    elif isinstance(spec, dict):
        if actual is MISSING:
            raise AssertionFailed(path, "object expected", expected="object", actual=actual)
        if not isinstance(actual, dict):
            raise AssertionFailed(path, "object expected", expected="object", actual=actual)
        for key, sub in spec.items():
            check(actual.get(key, MISSING), sub, join(path, key))
    elif isinstance(spec, list):
        if not isinstance(actual, list):
            raise AssertionFailed(path, "array expected", expected="array", actual=actual)
        if len(actual) < len(spec):
            raise AssertionFailed(path, f"array has {len(actual)} element(s), "
                                        f"{len(spec)} asserted", actual=actual)
        for i, sub in enumerate(spec):
            check(actual[i], sub, join(path, i))
    else:
        if actual is MISSING:
            raise AssertionFailed(path, "field missing", expected=spec, actual=actual)
        if not equal(actual, spec):
            raise AssertionFailed(path, "value differs", expected=spec, actual=actual)


def equal(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def passes(actual, spec, path=""):
    try:
        check(actual, spec, path)
        return None
    except AssertionFailed as failure:
        return failure


def need_present(actual, op, path):
    if actual is MISSING:
        raise AssertionFailed(path, f"field missing ({op})", actual=actual)


def check_operator(actual, op, arg, path):
    if op == "type":
        need_present(actual, op, path)
        if json_type(actual) != arg:
            raise AssertionFailed(path, f"type {arg} expected", expected=arg,
                                  actual=f"{json_type(actual)} {short(actual, 60)}")
    elif op == "exists":
        if bool(arg) != (actual is not MISSING):
            raise AssertionFailed(path, "field should be present" if arg else
                                  "field should not be present", actual=actual)
    elif op == "absent":
        if bool(arg) != (actual is MISSING):
            raise AssertionFailed(path, "field should be absent" if arg else
                                  "field should be present", actual=actual)
    elif op in ("contains", "starts_with", "ends_with", "matches"):
        need_present(actual, op, path)
        if op == "contains" and isinstance(actual, list):
            if not any(equal(x, arg) for x in actual):
                raise AssertionFailed(path, f"array does not contain {arg!r}", actual=actual)
            return
        if not isinstance(actual, str):
            raise AssertionFailed(path, f"string expected for {op}", actual=actual)
        ok = {"contains": lambda: arg in actual,
              "starts_with": lambda: actual.startswith(arg),
              "ends_with": lambda: actual.endswith(arg),
              "matches": lambda: re.search(arg, actual) is not None}[op]()
        if not ok:
            raise AssertionFailed(path, f"{op} {arg!r} failed", actual=actual)
    elif op in ("gte", "lte", "gt", "lt"):
        need_present(actual, op, path)
        if json_type(actual) != "number":
            raise AssertionFailed(path, f"number expected for {op}", actual=actual)
        ok = {"gte": actual >= arg, "lte": actual <= arg,
              "gt": actual > arg, "lt": actual < arg}[op]
        if not ok:
            raise AssertionFailed(path, f"{op} {arg} failed", actual=actual)
    elif op in ("count", "count_gte", "count_lte"):
        need_present(actual, op, path)
        if not isinstance(actual, (list, str, dict)):
            raise AssertionFailed(path, f"array expected for {op}", actual=actual)
        n = len(actual)
        ok = {"count": n == arg, "count_gte": n >= arg, "count_lte": n <= arg}[op]
        if not ok:
            raise AssertionFailed(path, f"{op} {arg} failed: length is {n}", actual=actual)
    elif op == "one_of":
        need_present(actual, op, path)
        for option in arg:
            if isinstance(option, (dict, list)):
                if passes(actual, option, path) is None:
                    return
            elif equal(actual, option):
                return
        raise AssertionFailed(path, "not one of the allowed values", expected=f"one of {arg}",
                              actual=actual)
    elif op == "all_of":
        for sub in arg:
            check(actual, sub, path)
    elif op == "any_of":
        failures = [passes(actual, sub, path) for sub in arg]
        if all(f is not None for f in failures):
            raise AssertionFailed(path, "no alternative of any_of holds: " +
                                  " | ".join(f.describe() for f in failures))
    elif op == "not":
        if passes(actual, arg, path) is None:
            raise AssertionFailed(path, f"`not` assertion held: {short(arg)}", actual=actual)
    elif op == "items":
        need_present(actual, op, path)
        if not isinstance(actual, list):
            raise AssertionFailed(path, "array expected for items", actual=actual)
        if isinstance(arg, list):
            check(actual, arg, path)
        else:
            for i, element in enumerate(actual):
                check(element, arg, join(path, i))
    else:   # pragma: no cover - guarded by OPERATORS
        raise AssertionFailed(path, f"unknown operator {op}")


# ---- dot-paths: task.artifacts[0].parts[*].text -------------------------

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\*|-?\d+)\]")


def parse_path(text):
    tokens = []
    for name, index in _TOKEN.findall(text.strip()):
        if name:
            tokens.append(name)
        elif index == "*":
            tokens.append("*")
        else:
            tokens.append(int(index))
    return tokens


def resolve(value, path):
    """All values at `path` (wildcards fan out); [] when nothing is there."""
    current = [value]
    for token in parse_path(path):
        following = []
        for item in current:
            if token == "*":
                if isinstance(item, list):
                    following.extend(item)
                elif isinstance(item, dict):
                    following.extend(item.values())
            elif isinstance(token, int):
                if isinstance(item, list) and -len(item) <= token < len(item):
                    following.append(item[token])
            elif isinstance(item, dict) and token in item:
                following.append(item[token])
        current = following
    return current


def resolve_one(value, path):
    found = resolve(value, path)
    return found[0] if found else MISSING
