"""The ceiling: a bare asyncio responder, for comparison with a2a_min's asyncio server.

It does only what any SendMessage answer must: read an HTTP/1.1 request (with
keep-alive), parse its JSON-RPC body, build a fresh completed task (uuid4 ids,
a timestamp, the user's message in its history, an echo artifact) and
serialize it. No validation, no store, no agent, no error handling: a number
to compare with, never a server to use.

Usage: python benchmarks/bare_asyncio.py PORT
"""

import asyncio
import json
import sys
import time
import uuid

CARD = json.dumps({"name": "bare", "supportedInterfaces": []}).encode()


class Responder(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.buffer = b""

    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1").split("\r\n")
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4:end + 4 + length]
            self.buffer = self.buffer[end + 4 + length:]
            self.transport.write(self.answer(head[0], body))

    def answer(self, request_line, body):
        if request_line.startswith("GET"):
            payload = CARD
        else:
            request = json.loads(body)
            message = request["params"]["message"]
            task_id, context_id = str(uuid.uuid4()), str(uuid.uuid4())
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            task = {"id": task_id, "contextId": context_id,
                    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": stamp},
                    "artifacts": [{"artifactId": str(uuid.uuid4()),
                                   "parts": [{"text": message["parts"][0]["text"]}]}],
                    "history": [{**message, "taskId": task_id, "contextId": context_id}]}
            payload = json.dumps({"jsonrpc": "2.0", "id": request["id"],
                                  "result": {"task": task}}).encode()
        return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                % len(payload)) + payload


async def main(port):
    server = await asyncio.get_running_loop().create_server(Responder, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
