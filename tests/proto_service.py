"""Print lf.a2a.v1.A2AService as JSON: each rpc's types, streaming and HTTP rules.

Reads the reference SDK's generated module (a subprocess of the test suite, so
that its descriptor pool meets no other copy of lf.a2a.v1).
"""

import json

from a2a.types import a2a_pb2
from google.api import annotations_pb2

service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
out = {}
for method in service.methods:
    rule = method.GetOptions().Extensions[annotations_pb2.http]
    rules = [rule] + list(rule.additional_bindings)
    out[method.name] = {
        "input": method.input_type.full_name,
        "output": method.output_type.full_name,
        "server_streaming": method.server_streaming,
        "http": [(r.WhichOneof("pattern").upper(), getattr(r, r.WhichOneof("pattern")))
                 for r in rules],
    }
print(json.dumps(out))
