"""Self-checks of the gRPC mapping, the webhook receiver, the client harness
and the runner's applicability rules: python -m unittest discover -s tests
(the gRPC end-to-end check needs grpcio and protobuf; it is skipped without)."""
import json
import os
import sys
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))

from acts.runner import Outcome, Runner, Skipped, Test, uses_variable  # noqa: E402
from acts.webhook import Receiver  # noqa: E402
from acts.wire import Result, normalize_grpc_error  # noqa: E402

try:
    import grpc  # noqa: F401
    from google.protobuf import json_format  # noqa: F401
    HAVE_GRPC = True
except ImportError:
    HAVE_GRPC = False

INFO = "type.googleapis.com/google.rpc.ErrorInfo"


class GrpcErrors(unittest.TestCase):
    def test_reason_names_the_error(self):
        e = normalize_grpc_error("NOT_FOUND", "no task", [{"@type": INFO,
                                                          "reason": "TASK_NOT_FOUND"}])
        self.assertEqual(e["name"], "TaskNotFoundError")
        self.assertEqual(e["wire"]["status"], "NOT_FOUND")

    def test_wrong_status_for_reason_is_reported(self):
        e = normalize_grpc_error("UNIMPLEMENTED", "x", [{"@type": INFO,
                                                        "reason": "UNSUPPORTED_OPERATION"}])
        self.assertIn("but gRPC UNIMPLEMENTED, expected FAILED_PRECONDITION", e["name"])

    def test_status_without_reason(self):
        self.assertEqual(normalize_grpc_error("INVALID_ARGUMENT", "x", [])["name"],
                         "InvalidParamsError")
        self.assertEqual(normalize_grpc_error("UNAUTHENTICATED", "x", [])["name"],
                         "gRPC UNAUTHENTICATED")


class Webhook(unittest.TestCase):
    def test_receives_and_attributes(self):
        r = Receiver()
        try:
            self.assertEqual(r.httpd.server_address[0], "127.0.0.1")
            url = r.new_url("T-1")
            other = r.new_url("T-2")
            req = urllib.request.Request(url, data=json.dumps({"task": {"id": "t"}}).encode(),
                                         headers={"Content-Type": "application/json",
                                                  "Authorization": "Bearer x"})
            urllib.request.urlopen(req, timeout=5).read()
            got = r.wait(url, lambda d: len(d) >= 1, 5)
            self.assertEqual(len(got), 1)
            self.assertEqual(got[0]["body"], {"task": {"id": "t"}})
            self.assertEqual(got[0]["headers"]["authorization"], "Bearer x")
            self.assertEqual(r.wait(other, lambda d: bool(d), 0.1), [])
        finally:
            r.close()

    def test_loopback_only(self):
        with self.assertRaises(ValueError):
            Receiver("0.0.0.0")


class ClientHarness(unittest.TestCase):
    def setUp(self):
        from acts.client import ClientHarness as Harness
        self.h = Harness(REPO)

    def tearDown(self):
        self.h.close()

    def test_result_and_error(self):
        task = {"id": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}
        self.assertEqual(self.h.parse("get_task", {"jsonrpc": "2.0", "id": "x",
                                                   "result": task}), task)
        err = self.h.parse("get_task", {"jsonrpc": "2.0", "id": "x",
                                        "error": {"code": -32001, "message": "Task not found"}})
        self.assertEqual(err["error"]["code"], -32001)
        self.assertEqual(err["error"]["type"], "TaskNotFoundError")

    def test_card(self):
        card = {"name": "n", "version": "1", "capabilities": {"streaming": False}}
        self.assertEqual(self.h.parse("get_agent_card", card)["name"], "n")


class FakeBinding:
    def __init__(self, transport):
        self.transport = transport


def make_test(spec, doc=None):
    return Test(spec, {"id": "s", "tests": [spec]}, doc or {"acts_version": "1.0",
                                                            "spec_version": "1.0"}, "x")


class Applicability(unittest.TestCase):
    def test_authentication_precondition_reads_security_schemes(self):
        spec = {"id": "A", "name": "a", "level": "must", "steps": [],
                "preconditions": {"capabilities": {"authentication": True}}}
        bare = Runner(FakeBinding("jsonrpc"), {"capabilities": {}}, "http://127.0.0.1:1")
        self.assertIn("authentication", bare.skip_reason(make_test(spec)))
        secured = Runner(FakeBinding("jsonrpc"), {"capabilities": {}, "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}}, "http://127.0.0.1:1")
        self.assertIsNone(secured.skip_reason(make_test(spec)))

    def test_transport_list(self):
        spec = {"id": "A", "name": "a", "level": "must", "steps": [], "transport": ["grpc"]}
        self.assertIsNone(Runner(FakeBinding("grpc"), {}, "u").skip_reason(make_test(spec)))
        self.assertIn("grpc only", Runner(FakeBinding("rest"), {}, "u").skip_reason(
            make_test(spec)))

    def test_raw_step_skipped_on_grpc(self):
        runner = Runner(FakeBinding("grpc"), {}, "u")
        with self.assertRaises(Skipped):
            runner.execute({"id": "r", "raw": {"method": "GET", "path": "/"}}, None, None)

    def test_webhook_url_never_the_placeholder(self):
        spec = {"id": "P", "name": "p", "level": "may",
                "steps": [{"id": "s", "operation": "create_push_config",
                           "params": {"url": "{{webhookUrl}}"}}]}
        self.assertTrue(uses_variable(spec, "webhookUrl"))
        doc = {"acts_version": "1.0", "spec_version": "1.0",
               "variables": {"webhookUrl": "https://example.com/hook"}}
        runner = Runner(FakeBinding("jsonrpc"), {}, "u")
        values = runner.runner_variables(make_test(spec, doc), Outcome(None, 'pass'))
        self.assertTrue(values["webhookUrl"].startswith("http://127.0.0.1:"))
        r = Receiver()
        try:
            runner.webhook = r
            values = runner.runner_variables(make_test(spec, doc), Outcome(None, 'pass'))
            self.assertTrue(values["webhookUrl"].startswith(f"http://127.0.0.1:{r.port}/"))
        finally:
            r.close()


class StreamingPrecondition(unittest.TestCase):
    def test_inferred_only_when_asked(self):
        from acts.runner import expects_stream
        reads = {"id": "S", "name": "s", "level": "must", "steps": [
            {"id": "a", "operation": "send_streaming_message", "params": {},
             "expect_stream": {"min_count": 1}}]}
        fails = {"id": "E", "name": "e", "level": "must", "steps": [
            {"id": "a", "operation": "subscribe_to_task", "params": {},
             "expect": {"error": {"exists": True}}}]}
        self.assertTrue(expects_stream(reads))
        self.assertFalse(expects_stream(fails))
        card = {"capabilities": {"streaming": False}}
        self.assertIsNone(Runner(FakeBinding("jsonrpc"), card, "u").skip_reason(make_test(reads)))
        self.assertIn("streaming", Runner(FakeBinding("jsonrpc"), card, "u",
                                          infer_streaming=True).skip_reason(make_test(reads)))


class PushStaysLocal(unittest.TestCase):
    def test_literal_url_replaced(self):
        from acts.runner import Context
        runner = Runner(FakeBinding("jsonrpc"), {}, "u")
        out = Outcome(None, "pass")
        ctx = Context({}, {})
        fixed = runner.keep_push_local({"taskId": "t", "pushNotificationConfig": {
            "url": "https://example.com/webhooks/a2a-tests"}}, ctx, out)
        self.assertTrue(fixed["pushNotificationConfig"]["url"].startswith("http://127.0.0.1:"))
        sent = runner.keep_push_local({"message": {}, "configuration": {
            "taskPushNotificationConfig": {"url": "http://10.0.0.1/x"}}}, ctx, out)
        self.assertTrue(sent["configuration"]["taskPushNotificationConfig"]["url"].startswith(
            "http://127.0.0.1:"))


@unittest.skipUnless(HAVE_GRPC, "grpcio and protobuf are not installed")
class GrpcEndToEnd(unittest.TestCase):
    """The gRPC binding against a2a_min's own gRPC server on 127.0.0.1:0."""

    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, REPO)
        import a2a_grpc
        import a2a_min
        import a2a_min_pb2
        from acts.wire import GrpcBinding, Http
        cls.server, port = a2a_grpc.create_server(a2a_min.Server(lambda ctx: "hi"),
                                                  "127.0.0.1:0")
        cls.server.start()
        cls.binding = GrpcBinding(Http("http://127.0.0.1:9"), f"127.0.0.1:{port}",
                                  pb2=a2a_min_pb2, timeout=10)

    @classmethod
    def tearDownClass(cls):
        cls.binding.close()
        cls.server.stop(None)

    def test_send_get_and_missing(self):
        sent = self.binding.call("send_message", {"message": {
            "messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}})
        self.assertIsNone(sent.error)
        self.assertEqual(sent.http_status, 200)
        task_id = sent.root["task"]["id"]
        got = self.binding.call("get_task", {"id": task_id})
        self.assertEqual(got.root["id"], task_id)
        missing = self.binding.call("get_task", {"id": "00000000-0000-0000-0000-000000000000"})
        self.assertEqual(missing.error["name"], "TaskNotFoundError")
        self.assertEqual(missing.http_status, 404)

    def test_required_fields_at_default_are_written(self):
        listed = self.binding.call("list_tasks", {"contextId": "no-such-context"})
        self.assertIsNone(listed.error)
        self.assertEqual(listed.root.get("nextPageToken"), "")
        self.assertEqual(listed.root.get("tasks"), [])

    def test_stream(self):
        result = self.binding.call("send_streaming_message", {"message": {
            "messageId": "m2", "role": "ROLE_USER", "parts": [{"text": "hello"}]}},
            stream_timeout=10)
        self.assertIsNone(result.error)
        self.assertGreaterEqual(len(result.events), 1)


if __name__ == "__main__":
    unittest.main()
