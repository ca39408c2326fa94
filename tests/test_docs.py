"""The README is a front page, and docs/ holds the rest: each page exists,
every link between them resolves, the README stays under 3,000 words with
its commands, curl walkthroughs and ten-line agent in its first 200 lines,
and docs/reference.md's table names every Server option and limit with
the default the code has. (The command lines themselves run in
tests/test_readme.py.)"""

import inspect
import os
import re

import a2a_min
from harness import ROOT

PAGES = ("deploying", "security", "compatibility", "performance", "reference")


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


def test_the_readme_is_a_front_page():
    text = read("README.md")
    words = len(re.sub(r"```.*?```", " ", text, flags=re.S).split()) + sum(
        len(block.split()) for block in re.findall(r"```.*?```", text, flags=re.S))
    assert words <= 3000, words
    first = "\n".join(text.splitlines()[:200])
    assert "python3 a2a_min.py " in first and "python3 -m pytest -q" in first
    assert re.search(r"\bpython\b", text.replace("```python", "")) is None   # one spelling
    for heading in ("## Walkthrough: every JSON-RPC operation with curl",
                    "## Walkthrough: every HTTP+JSON route with curl",
                    "## Your agent in ten lines"):
        assert heading in first, heading
    for name in PAGES:
        assert f"(docs/{name}.md)" in text, name


def test_every_link_between_the_pages_resolves():
    for name in ["README.md", "CONFORMANCE.md"] + [f"docs/{p}.md" for p in PAGES]:
        folder = os.path.dirname(os.path.join(ROOT, name))
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", read(name)):
            if "://" in target:
                continue
            assert os.path.exists(os.path.join(folder, target)), (name, target)


def test_the_reference_names_every_option_and_limit_with_its_default():
    table = {}
    for line in read("docs/reference.md").splitlines():
        found = re.match(r"\| `(\w+)` \| `(.*?)` \|", line)
        if found:
            table[found.group(1)] = found.group(2)
    options = [p for p in inspect.signature(a2a_min.Server.__init__).parameters.values()
               if p.name not in ("self", "agent", "limits")]
    for option in options:
        assert table.get(option.name) == repr(option.default), option.name
    for limit, default in a2a_min.DEFAULT_LIMITS.items():
        assert table.get(limit) == repr(default), limit
    assert len(table) == len(options) + len(a2a_min.DEFAULT_LIMITS)


def test_ci_runs_the_readmes_test_lines_as_written():
    """The README's test command and its SQLite line are lines of .ci/run,
    as written: the README promises nothing CI does not run."""
    readme, ci = read("README.md"), read(".ci/run").splitlines()
    command = re.findall(r"```bash\n(.*?)```", readme, re.S)[1].strip()
    sqlite = re.search(r"`(A2A_TEST_STORE=sqlite [^`]*)`", readme).group(1)
    assert command.endswith("python3 -m pytest -q") and command in ci
    assert sqlite == "A2A_TEST_STORE=sqlite python3 -m pytest -q" and sqlite in ci
