"""Where things live in a2a_min.py, measured from the file itself.

The file is read top to bottom to learn A2A (shared/STYLE.md): the protocol
sections (tables, errors, data model, store, agent execution, operations,
authentication, bindings) hold no event-loop code, no socket and no outbound
HTTP; webhook delivery, the speed helpers, the event-loop hooks and the
adapters come after them, in that order, then the agent console's page (its
HTML, CSS and script in one section, after the adapters) and the demo. These tests hold the file to that
shape, and to the figures issue 14 set: explanation a quarter of the lines,
no function over 100 lines, at most 40 public names.
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

PROTOCOL = ("Tables", "Errors", "The data model", "The task store", "Agent execution",
            "Operations", "Authentication", "Bindings")
AFTER = ("Webhook delivery", "Keeping tasks in a file", "Sharing a store between processes",
         "Speed helpers", "Running on an event loop", "Adapters", "The agent console",
         "The demo")

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
    expected = PROTOCOL + AFTER
    assert len(titles) == len(expected), titles
    for title, start in zip(titles, expected):
        assert title.startswith(start), (title, start)
    assert [n for n, _, _, _ in sections()] == list(range(1, len(expected) + 1))


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


def test_explanation_is_a_quarter_of_the_file():
    """Comments and docstrings, against the non-blank lines outside large
    string constants (the help text, the HTML of the demo)."""
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
    lines = [i for i, text in enumerate(LINES, 1) if text.strip() and i not in big]
    share = sum(i in explained for i in lines) / len(lines)
    assert share >= 0.25, f"{share:.1%} of the lines explain"


def test_no_function_is_longer_than_100_lines():
    long = [(node.name, node.lineno, node.end_lineno - node.lineno + 1)
            for node in ast.walk(TREE)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > 100]
    assert not long, long


def test_the_public_api_is_small_and_documented():
    assert len(a2a_min.__all__) <= 44
    assert len(set(a2a_min.__all__)) == len(a2a_min.__all__)
    for name in a2a_min.__all__:
        value = getattr(a2a_min, name)
        if callable(value):
            assert value.__doc__, f"{name} has no docstring"
    # HTTP-reading internals and speed types are not part of it.
    for private in ("_RequestReader", "_HTTPRequest", "_BadRequest", "_StoredTask", "_Clock",
                    "_PendingAnswer"):
        assert hasattr(a2a_min, private) and private.lstrip("_") not in a2a_min.__all__


def test_a_task_changes_state_only_through_apply():
    """The state table is the one place a task is made or its state set: in
    the protocol sections no code outside _apply writes a Task (a dict with
    an "id" and a "status" at once), and every event kind has its row. (One
    shortcut in "Speed helpers", _ended_at_once, makes the task _apply would
    make, measured and held to it by a test.)"""
    apply = next(n for n in ast.walk(TREE) if isinstance(n, ast.FunctionDef) and n.name == "_apply")
    assert set(a2a_min.TRANSITIONS) == {"message", "input", "statusUpdate", "artifactUpdate",
                                        "cancel"}
    protocol_end = next(last for n, t, _, last in sections() if t.startswith("Bindings"))
    for node in ast.walk(TREE):
        line = getattr(node, "lineno", 0)
        if apply.lineno <= line <= apply.end_lineno or line > protocol_end:
            continue
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        elif isinstance(node, ast.Call):
            keys = [k.arg for k in node.keywords]
        else:
            continue
        assert not ("id" in keys and "status" in keys), line
    for meets, leaves in a2a_min.TRANSITIONS.values():
        assert not meets & a2a_min.TERMINAL_STATES          # a terminal task is final
        assert leaves in ("=", "*") or leaves.startswith("TASK_STATE_")


def test_the_console_page_lives_in_its_own_section_only():
    """The page's HTML, CSS and script are in "The agent console" and nowhere
    else; the rest of the file reaches it through one call."""
    (_, _, first, last), = [s for s in sections() if s[1].startswith("The agent console")]
    outside = [i + 1 for i, line in enumerate(LINES)
               if ("_CONSOLE_" in line or "<script" in line or "_console_response" in line)
               and not first <= i + 1 <= last]
    assert len(outside) == 1 and "_console_response(server" in LINES[outside[0] - 1], outside
