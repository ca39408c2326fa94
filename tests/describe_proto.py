"""Print the lf.a2a.v1 file descriptor of either our generated module or the
reference SDK's, as JSON (messages, enums, service; no source info).

    python tests/describe_proto.py ours|sdk

Each runs in its own process: both modules register lf.a2a.v1.
"""

import json
import os
import sys

from google.protobuf import descriptor_pb2, json_format

if sys.argv[1] == "ours":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import a2a_min_pb2 as module
else:
    from a2a.types import a2a_pb2 as module

proto = descriptor_pb2.FileDescriptorProto()
module.DESCRIPTOR.CopyToProto(proto)
proto.ClearField("source_code_info")
print(json.dumps(json_format.MessageToDict(proto)))
