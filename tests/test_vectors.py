"""Golden request/response vectors (tests/vectors/*.json) for the JSON-RPC binding.

Each file holds the raw HTTP request (headers, body as text) and the exact
answer expected. Values the server generates (ids, timestamps) appear in the
expected answer as "<uuid>" (a version 7 UUID) and "<timestamp>". To add a vector, write the
request with "response": null and run  python tests/test_vectors.py --fill.
"""

import glob
import json
import os
import re
import sys

import pytest

from harness import scenario_agent  # noqa: I001 - first: it puts a2a_min on the path
import a2a_min

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def normalize(value):
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, str) and UUID.match(value):
        return "<uuid>"
    if isinstance(value, str) and STAMP.match(value):
        return "<timestamp>"
    return value


def answer(vector):
    server = a2a_min.Server(scenario_agent, name="Vectors", description="Golden vectors.")
    resp = server.handle_http(vector.get("method", "POST"), vector.get("path", "/"),
                              vector.get("query", ""), vector["headers"],
                              vector["body"].encode("utf-8"))
    body = json.loads(resp.body) if resp.stream is None else None
    return {"status": resp.status, "body": normalize(body)}


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(HERE, "*.json"))),
                         ids=lambda p: os.path.basename(p)[:-5])
def test_vector(path):
    with open(path, encoding="utf-8") as f:
        vector = json.load(f)
    assert vector["response"] is not None, "run python tests/test_vectors.py --fill"
    assert answer(vector) == vector["response"]


if __name__ == "__main__" and "--fill" in sys.argv:
    for path in sorted(glob.glob(os.path.join(HERE, "*.json"))):
        with open(path, encoding="utf-8") as f:
            vector = json.load(f)
        if vector.get("response") is None:
            vector["response"] = answer(vector)
            with open(path, "w", encoding="utf-8") as f:
                json.dump(vector, f, indent=2, ensure_ascii=False)
                f.write("\n")
            print("filled", os.path.basename(path))
