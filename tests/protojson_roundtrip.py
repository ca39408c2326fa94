"""Round-trip ProtoJSON documents through protobuf's json_format.

Reads [[message name, document], ...] as JSON on stdin, parses each into the
reference SDK's generated lf.a2a.v1 classes (unknown fields are an error),
serializes it back with MessageToDict, and prints the results as JSON. Runs in
its own process: the SDK's generated module owns lf.a2a.v1 in its pool.
"""

import json
import sys

from a2a.types import a2a_pb2
from google.protobuf import json_format

out = []
for name, doc in json.load(sys.stdin):
    message = getattr(a2a_pb2, name)()
    json_format.Parse(json.dumps(doc), message, ignore_unknown_fields=False)
    out.append(json_format.MessageToDict(message))
print(json.dumps(out))
