"""The reference SDK's card signing, as a separate process (its generated
lf.a2a.v1 module must not share a process with a2a_min_pb2): reads one JSON
request on standard input, writes one JSON answer.

  {"op": "verify", "card": {...}, "key": PEM, "alg": "ES256"} -> {"ok": true} or {"ok": false, "error": ...}
  {"op": "sign", "card": {...}, "key": PEM, "header": {...}}  -> {"card": {... signed ...}}
"""

import json
import sys

from google.protobuf.json_format import MessageToDict, ParseDict

from a2a.types import AgentCard
from a2a.utils.signing import create_agent_card_signer, create_signature_verifier


def main():
    request = json.load(sys.stdin)
    card = ParseDict(request["card"], AgentCard(), ignore_unknown_fields=True)
    if request["op"] == "sign":
        signed = create_agent_card_signer(request["key"], request["header"])(card)
        print(json.dumps({"card": MessageToDict(signed)}))
        return
    try:
        create_signature_verifier(lambda kid, jku: request["key"], [request["alg"]])(card)
        print(json.dumps({"ok": True}))
    except Exception as error:                     # the SDK's verdict, whatever its type
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))


if __name__ == "__main__":
    main()
