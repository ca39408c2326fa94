"""Where things live: a2a_min.py and its companions, measured from the files.

a2a_min.py is read top to bottom to learn A2A (shared/STYLE.md): the protocol
sections (tables, errors, data model, store, authentication, agent
execution, operations, bindings, the server) hold no event-loop code, no
socket and no outbound HTTP; webhook delivery, the event-loop hooks, the
adapters and the demo sit among and after them, in that order (a shortcut taken for speed stands beside
the code it speeds, saying what it saves). What deployment needs
is in companions (a2a_store.py, a2a_cli.py, a2a_console.py...): the imports
run one way (companions import a2a_min; a2a_min reaches them only through
_companion()), with no cycle, and a companion uses no private name of
a2a_min but those of its declared second tier, COMPANION_API. Figures:
explanation a quarter of the lines (of each section too), no function over
60 lines, at most 40 public names, and a SendMessage read along its path
with at most 12 jumps of more than 500 lines; the file's size only shrinks
toward its budget (6,500 lines, 40,000 code tokens).
"""
import ast
import io
import os
import re
import tokenize

import a2a_min

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = open(os.path.join(ROOT, "a2a_min.py"), encoding="utf-8").read()
LINES = SOURCE.splitlines()
TREE = ast.parse(SOURCE)

# The sections in the order they teach; the protocol's are free of event
# loops and sockets (webhook delivery sends HTTP, so it is not one of them:
# the server that comes after it only hands it events).
ORDER = ("Tables", "Errors", "The data model", "The task store", "Authentication",
         "Agent execution", "Operations", "Bindings", "Webhook delivery", "The server",
         "Running on an event loop", "Adapters", "The demo")
PROTOCOL = ("Tables", "Errors", "The data model", "The task store", "Authentication",
            "Agent execution", "Operations", "Bindings", "The server")
# What a protocol section may use before it is defined: the hosts' hooks.
HOST_HOOKS = {"_LoopThread", "_drive_async"}

# Names that mean an event loop, a socket or an HTTP client: none may appear
# in the code (not the comments) of a protocol section.
FORBIDDEN = {"asyncio", "socket", "socketserver", "http", "ssl", "selectors",
             "call_soon", "call_soon_threadsafe", "call_later", "get_running_loop",
             "get_event_loop", "create_task", "create_future", "run_coroutine_threadsafe",
             "Future", "loop", "_LoopThread_loop"}


def sections():
    """[(number, title, first line, last line)] from the "# N. Title" banners."""
    found = []
    for i, line in enumerate(LINES[:-1]):
        if line.startswith("# ====") and re.match(r"# \d+\. ", LINES[i + 1]):
            number, title = LINES[i + 1][2:].split(". ", 1)
            found.append((int(number), title, i + 1))
    return [(n, t, start, (found[k + 1][2] - 1) if k + 1 < len(found) else len(LINES))
            for k, (n, t, start) in enumerate(found)]


def test_the_sections_come_in_the_order_that_teaches():
    titles = [title for _, title, _, _ in sections()]
    expected = ORDER
    assert len(titles) == len(expected), titles
    for title, start in zip(titles, expected):
        assert title.startswith(start), (title, start)
    assert [n for n, _, _, _ in sections()] == list(range(1, len(expected) + 1))


def test_no_protocol_section_uses_a_name_defined_after_it():
    """Read top to bottom, a name is met where it is defined or after: a
    protocol section uses nothing of a later section (at run time Python
    would not mind; a reader would), but the hosts' hooks (HOST_HOOKS)."""
    spans = sections()

    def section_of(line):
        return next((n for n, _, first, last in spans if first <= line <= last), 0)
    defined = {}
    for node in TREE.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.setdefault(node.name, section_of(node.lineno))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    defined.setdefault(target.id, section_of(node.lineno))
    protocol = {n for n, title, _, _ in spans if title.startswith(PROTOCOL)}
    early = sorted({(section_of(node.lineno), node.id, defined[node.id])
                    for node in ast.walk(TREE)
                    if isinstance(node, ast.Name) and node.id in defined
                    and node.id not in HOST_HOOKS and node.lineno >= spans[0][2]
                    and section_of(node.lineno) in protocol
                    and defined[node.id] > section_of(node.lineno)})
    assert not early, f"(section, name, the later section defining it): {early}"


def _code_names(first, last):
    """Every name, attribute and imported module used by the code between two
    lines (comments and docstrings are prose, and may say "event loop")."""
    names = set()
    for node in ast.walk(TREE):
        line = getattr(node, "lineno", None)
        if line is None or not first <= line <= last:
            continue
        if isinstance(node, ast.Name):
            names.add((node.id, line))
        elif isinstance(node, ast.Attribute):
            names.add((node.attr, line))
        elif isinstance(node, ast.Import):
            names.update((alias.name.split(".")[0], line) for alias in node.names)
            names.update((alias.name, line) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(((node.module or "").split(".")[0], line))
            names.add((node.module or "", line))
        elif isinstance(node, ast.arg):
            names.add((node.arg, line))
    return names


def test_protocol_sections_hold_no_event_loop_socket_or_http_client():
    for number, title, first, last in sections():
        if not title.startswith(PROTOCOL):
            continue
        used = _code_names(first, last)
        bad = sorted((line, name) for name, line in used
                     if name in FORBIDDEN or name in ("http.client", "http.server")
                     or name.startswith("_Loop") and name != "_LoopThread")
        assert not bad, f"section {number} ({title}) uses {bad}"


def test_only_the_later_sections_import_a_host_or_network_module():
    protocol_end = next(last for n, t, _, last in sections() if t.startswith("Bindings"))
    for node in ast.walk(TREE):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node.lineno <= protocol_end:
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""])
            for module in modules:
                assert module.split(".")[0] not in (
                    "asyncio", "socket", "socketserver", "http", "ssl", "wsgiref", "grpc",
                    "selectors"), (module, node.lineno)


def _explained_lines():
    """(the lines that explain: comments and docstrings; the lines that count:
    non-blank, outside large string constants such as the help text)."""
    explained, big = set(), set()
    for token in tokenize.generate_tokens(io.StringIO(SOURCE).readline):
        if token.type == tokenize.COMMENT:
            explained.add(token.start[0])
    docstrings = set()
    for node in ast.walk(TREE):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                docstrings.add(id(first.value))
                explained.update(range(first.lineno, first.end_lineno + 1))
    for node in ast.walk(TREE):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings and node.end_lineno - node.lineno >= 10):
            big.update(range(node.lineno, node.end_lineno + 1))
    # The proto's tables (MESSAGES, ENUMS) are explained row by row when each
    # group of messages opens with a comment that says what it is.
    for node in TREE.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and node.targets[0].id in ("MESSAGES", "ENUMS")):
            keys = [key.lineno for key in node.value.keys]
            said = [i for i in range(node.lineno, node.end_lineno + 1)
                    if LINES[i - 1].strip().startswith("#")]
            groups = [k for k, after in zip(keys, [node.lineno] + keys) if any(
                after <= i < k for i in said)]
            if keys[0] in groups and len(keys) <= 10 * len(groups):
                explained.update(range(node.lineno, node.end_lineno + 1))
    counted = {i for i, text in enumerate(LINES, 1) if text.strip() and i not in big}
    return explained, counted


def test_explanation_is_a_quarter_of_the_file_and_of_each_section():
    """Comments and docstrings, against the non-blank lines outside large
    string constants (the help text): in the file, and in every section."""
    explained, counted = _explained_lines()
    share = len(counted & explained) / len(counted)
    assert share >= 0.25, f"{share:.1%} of the lines explain"
    for number, title, first, last in sections():
        lines = {i for i in counted if first <= i <= last}
        share = len(lines & explained) / len(lines)
        assert share >= 0.25, f"section {number} ({title}): {share:.1%} of its lines explain"


def test_no_function_is_longer_than_60_lines():
    long = [(node.name, node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(TREE)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > 60]
    assert not long, long


def test_the_public_api_is_small_and_documented():
    assert len(a2a_min.__all__) <= 40
    assert len(set(a2a_min.__all__)) == len(a2a_min.__all__)
    for name in a2a_min.__all__:
        value = getattr(a2a_min, name)
        if callable(value):
            assert value.__doc__, f"{name} has no docstring"
    # HTTP-reading internals and speed types are not part of it.
    for private in ("_RequestReader", "_HTTPRequest", "_BadRequest", "_StoredTask", "_Clock",
                    "_PendingAnswer"):
        assert hasattr(a2a_min, private) and private.lstrip("_") not in a2a_min.__all__
    # Nor the types a user is handed and never names (the companions still import them).
    assert "TraceContext" not in a2a_min.__all__ and a2a_min.TraceContext.__doc__


def test_a_task_changes_state_only_through_apply():
    """The state table is the one place a task is made or its state set:
    nowhere in the file (not in a shortcut, not in a host) does code outside
    _apply write a Task (a dict with an "id" and a "status" at once, or a
    "state" set beside a "timestamp" outside a status event), and every event
    kind has its row."""
    apply = next(n for n in ast.walk(TREE) if isinstance(n, ast.FunctionDef) and n.name == "_apply")
    assert set(a2a_min.TRANSITIONS) == {"message", "input", "statusUpdate", "artifactUpdate",
                                        "cancel"}
    for node in ast.walk(TREE):
        line = getattr(node, "lineno", 0)
        if apply.lineno <= line <= apply.end_lineno:
            continue
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        elif isinstance(node, ast.Call):
            keys = [k.arg for k in node.keywords]
        else:
            continue
        assert not ("id" in keys and "status" in keys), line
    # (the architecture test once stopped at the bindings; the shortcut of a
    # turn stored once, _TurnWriter.at_once, calls _apply like the rest)
    source = ast.get_source_segment(SOURCE, next(
        n for n in ast.walk(TREE) if isinstance(n, ast.FunctionDef) and n.name == "at_once"))
    assert source.count("_apply(") == 3
    for meets, leaves in a2a_min.TRANSITIONS.values():
        assert not meets & a2a_min.TERMINAL_STATES          # a terminal task is final
        assert leaves in ("=", "*") or leaves.startswith("TASK_STATE_")


def test_the_console_page_is_a_companion():
    """The page's HTML, CSS and script are in a2a_console.py; a2a_min.py
    holds none of it, and reaches it through one _companion() call."""
    assert "<script" not in SOURCE and "_CONSOLE_" not in SOURCE
    assert SOURCE.count('_companion("a2a_console"') == 1


# -- the companions ----------------------------------------------------------------------

COMPANIONS = sorted(name[:-3] for name in os.listdir(ROOT)
                    if name.startswith("a2a_") and name.endswith(".py")
                    and not name.endswith("_pb2.py") and name != "a2a_min.py")


def _tree(module):
    with open(os.path.join(ROOT, module + ".py"), encoding="utf-8") as f:
        return ast.parse(f.read())


_LOADERS = {"_companion", "import_module", "__import__"}


def _imports(module):
    """The project's modules that ``module`` imports, anywhere in it: a lazy
    import inside a function is an edge too, and so is a load by name
    (a2a_min._companion("a2a_x", ...), importlib.import_module, __import__)
    but the core's own: a2a_min reaches companions only through its loader."""
    found = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and module != "a2a_min" and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else \
                getattr(node.func, "id", None)
            if called in _LOADERS:
                found.add(node.args[0].value.split(".")[0])
    return {name for name in found if name in COMPANIONS or name == "a2a_min"}


def test_the_imports_run_one_way_with_no_cycle():
    assert {"a2a_store", "a2a_cli", "a2a_console", "a2a_signing", "a2a_client", "a2a_grpc",
            "a2a_postgres", "a2a_v03"} <= set(COMPANIONS)
    graph = {module: _imports(module) - {module} for module in COMPANIONS + ["a2a_min"]}
    assert graph["a2a_min"] == set()                  # (it loads them with _companion)
    assert all("a2a_min" in graph[module] for module in COMPANIONS), graph
    # Depth-first: a module met again while still on the path closes a cycle.
    state = {}

    def visit(module, path):
        state[module] = "open"
        for other in sorted(graph[module]):
            assert state.get(other) != "open", " -> ".join(path + [other])
            if other not in state:
                visit(other, path + [other])
        state[module] = "done"
    for module in graph:
        if module not in state:
            visit(module, [module])


def test_companions_use_only_the_declared_second_tier():
    """Every private name of a2a_min a companion reaches (a2a_min._name, or
    ``from a2a_min import _name``) is in COMPANION_API; every name there
    exists, and some companion uses it (no stale entries)."""
    used = {}
    for module in COMPANIONS:
        for node in ast.walk(_tree(module)):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "a2a_min"):
                names = [node.attr]
            elif isinstance(node, ast.ImportFrom) and node.module == "a2a_min":
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith("_") and not name.startswith("__"):
                    used.setdefault(name, set()).add(module)
    undeclared = {name: sorted(where) for name, where in used.items()
                  if name not in a2a_min.COMPANION_API}
    assert not undeclared, undeclared
    assert len(set(a2a_min.COMPANION_API)) == len(a2a_min.COMPANION_API)
    for name in a2a_min.COMPANION_API:
        assert name in vars(a2a_min), name
    assert set(a2a_min.COMPANION_API) == set(used), set(a2a_min.COMPANION_API) ^ set(used)


def test_each_companion_is_importable_on_its_own():
    """A fresh interpreter imports each companion first, before a2a_min."""
    import subprocess
    import sys
    for module in COMPANIONS:
        if module in ("a2a_grpc",):
            try:
                import grpc  # noqa: F401
            except ImportError:
                continue
        done = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (module, done.stderr[-800:])


def test_a_companions_tests_are_found_by_its_name():
    """tests/test_<name>*.py for each companion a2a_<name>.py (a2a_cli's:
    tests/test_cli*.py), and each test file's docstring says what it tests."""
    files = os.listdir(os.path.join(ROOT, "tests"))
    for module in COMPANIONS:
        stem = module[len("a2a_"):]
        assert any(f.startswith(f"test_{stem}") and f.endswith(".py") for f in files), module
    for name in files:
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(ROOT, "tests", name), encoding="utf-8") as f:
                assert ast.get_docstring(ast.parse(f.read())), name



def _private_attributes_of_classes(tree):
    """The private names (one leading underscore) a module's classes define:
    methods, class attributes, __slots__ and what ``self.x = ...`` sets."""
    names = set()
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        names.add(target.id)
                        if target.id == "__slots__" and isinstance(node.value, ast.Tuple):
                            names.update(e.value for e in node.value.elts
                                         if isinstance(e, ast.Constant))
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and \
                    isinstance(node.value, ast.Name) and node.value.id == "self":
                names.add(node.attr)
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def test_no_companion_reaches_a_private_attribute_of_a_core_object():
    """What a companion uses of a Server, a turn, a channel or a context is
    their public surface (the observers', the shared store's): ``x._name``
    where a core class defines _name is a side door, unless the companion's
    own classes define that name too (then x is most likely its own)."""
    core = _private_attributes_of_classes(TREE)
    reached = {}
    for module in COMPANIONS:
        tree = _tree(module)
        own = _private_attributes_of_classes(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in core and node.attr not in own \
                    and not (isinstance(node.value, ast.Name) and (
                        node.value.id in ("self", "cls") or node.value.id.startswith("a2a_"))):
                reached.setdefault(module, []).append(f"{ast.unparse(node)} (line {node.lineno})")
    assert not reached, reached


def _private_names_used(module, of):
    """The private names of companion ``of`` that ``module`` uses: ``from of
    import _x``, ``of._x`` and ``of.Class._x``."""
    used = set()
    for node in ast.walk(_tree(module)):
        if isinstance(node, ast.ImportFrom) and node.module == of:
            used.update(a.name for a in node.names if a.name.startswith("_"))
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and \
                not node.attr.startswith("__"):
            base = node.value
            if isinstance(base, ast.Name) and base.id == of:
                used.add(node.attr)
            elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and \
                    base.value.id == of:
                used.add(f"{base.attr}.{node.attr}")
    return used


def test_a_companions_private_names_are_used_by_others_only_where_it_declares_them():
    """A companion that others build on says which of its private names they
    may use (its COMPANION_API, as a2a_min's); every one declared is used."""
    for of in COMPANIONS:
        used = set()
        for module in COMPANIONS:
            if module != of:
                used |= _private_names_used(module, of)
        declared = set(_declared(of))
        assert used <= declared, (of, sorted(used - declared))
        assert declared <= used, (of, "declared but unused", sorted(declared - used))


def _declared(module):
    """A companion's COMPANION_API, read from its file (importing a2a_grpc
    would need grpcio), or ()."""
    for node in _tree(module).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COMPANION_API"
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    return ()


def test_async_and_await_only_where_the_docstring_says():
    """The module docstring calls the protocol sections free of event loops:
    no ``async def``, ``await``, ``async for``/``with`` nor ``__await__`` in
    them; those live in "Running on an event loop" and the adapters."""
    spans = sections()
    protocol = [(first, last) for _, title, first, last in spans if title.startswith(PROTOCOL)]
    found = [(node.lineno, type(node).__name__, getattr(node, "name", ""))
             for node in ast.walk(TREE)
             if (isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith))
                 or isinstance(node, ast.FunctionDef) and node.name == "__await__")
             and any(first <= node.lineno <= last for first, last in protocol)]
    assert not found, found


def _jumps_of_one_send_message():
    """The calls from one function of a2a_min.py to another that one
    in-process SendMessage makes (after a first one warmed it up): a list of
    (caller's line, callee's first line, caller, callee)."""
    import json
    import sys
    server = a2a_min.Server(lambda text: "hi " + text)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "x"}]}}}).encode()
    headers = {"a2a-version": "1.0", "content-type": "application/json", "host": "127.0.0.1"}

    def send():
        return server.handle_http("POST", "/", "", dict(headers), body, "http://127.0.0.1",
                                  "127.0.0.1")
    send()
    path, calls = a2a_min.__file__, []

    def trace(frame, event, arg):
        caller = frame.f_back
        if event == "call" and frame.f_code.co_filename == path and caller is not None \
                and caller.f_code.co_filename == path:
            calls.append((caller.f_lineno, frame.f_code.co_firstlineno, caller.f_code.co_name,
                          frame.f_code.co_name))
    sys.settrace(trace)
    try:
        answer = send()
    finally:
        sys.settrace(None)
    assert answer.status == 200 and b"TASK_STATE_COMPLETED" in answer.body
    return calls


def test_a_send_message_reads_forward_with_few_long_jumps():
    """Issue 51's measure of a file ordered along a request: the simplest
    SendMessage, traced, jumps more than 500 lines at most 12 times (it was
    24). The fewest of three runs: an id's time part is formatted again only
    when the millisecond changes, one call more now and then."""
    long_jumps = min(([(a, b, f, g) for a, b, f, g in _jumps_of_one_send_message()
                       if abs(b - a) > 500] for _ in range(3)), key=len)
    assert len(long_jumps) <= 12, "\n".join(
        f"{f}:{a} -> {g}:{b}" for a, b, f, g in long_jumps)


# The core's size: STYLE.md's budget is 6,500 lines and 40,000 code tokens (tokens
# that are not comments, docstrings or layout: what a reader reads as code, and what
# Python compiles at every start of the script). The file is over it; the cap below
# is where it stands, so that it can only shrink: a feature that grows the core pays
# for itself inside it. A cap changes only in a commit of its own, saying why.
BUDGET = (6500, 40000)
CAP = (7800, 46600)


def code_tokens(source):
    """Code tokens as shared/hooks counts them: no comment, no layout, no docstring."""
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docstrings.add((body[0].lineno, body[0].col_offset))
    layout = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
              tokenize.ENCODING, tokenize.ENDMARKER}
    count, inside = 0, 0      # (Python 3.12+ splits an f-string into tokens: one, as before)
    for t in tokenize.generate_tokens(io.StringIO(source).readline):
        kind = tokenize.tok_name[t.type]
        inside += (kind == "FSTRING_START") - (kind == "FSTRING_END")
        if inside or t.type in layout:
            continue
        count += not (t.type == tokenize.STRING and t.start in docstrings)
    return count


def test_the_core_only_shrinks_toward_its_budget():
    lines, tokens = SOURCE.count("\n"), code_tokens(SOURCE)
    assert lines <= CAP[0] and tokens <= CAP[1], (
        f"a2a_min.py is {lines} lines and {tokens} code tokens, over its cap {CAP} (the budget "
        f"is {BUDGET}): a feature that grows the core pays for itself inside it, or goes to a "
        "companion")
