"""Self-checks of the assertion grammar: python -m unittest discover -s tests"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from acts.assertions import MISSING, passes, resolve  # noqa: E402
from acts.runner import check_monotonic, StepFailed, until_holds, event_view  # noqa: E402

OK = None


class Grammar(unittest.TestCase):
    def ok(self, actual, spec):
        self.assertIsNone(passes(actual, spec), f"{actual!r} vs {spec!r}")

    def bad(self, actual, spec):
        self.assertIsNotNone(passes(actual, spec), f"{actual!r} vs {spec!r} should fail")

    def test_exact_and_nested(self):
        self.ok({"a": {"b": 1}}, {"a": {"b": 1}})
        self.bad({"a": {"b": 2}}, {"a": {"b": 1}})
        self.bad({"a": {}}, {"a": {"b": 1}})
        self.bad({"a": True}, {"a": 1})          # bool is not a number
        self.ok({"a": 1.0}, {"a": 1})

    def test_type_exists_absent(self):
        self.ok({"x": "s"}, {"x": {"type": "string"}})
        self.bad({"x": 1}, {"x": {"type": "string"}})
        self.bad({}, {"x": {"type": "string"}})
        self.ok({}, {"x": {"absent": True}})
        self.bad({"x": None}, {"x": {"absent": True}})
        self.ok({"x": None}, {"x": {"exists": True}})
        self.ok({"x": None}, {"x": {"type": "null"}})
        # a field literally named "type"
        self.ok({"type": "about:blank"}, {"type": {"type": "string"}})

    def test_strings_numbers_counts(self):
        self.ok({"s": "hello task"}, {"s": {"contains": "task", "starts_with": "he",
                                            "ends_with": "sk", "matches": "^h.+k$"}})
        self.bad({"s": "x"}, {"s": {"matches": ".{12,}"}})
        self.ok({"n": 5}, {"n": {"gte": 5, "lte": 5, "gt": 4, "lt": 6}})
        self.ok({"a": [1, 2]}, {"a": {"count": 2, "count_gte": 1, "count_lte": 2}})
        self.bad({"a": [1, 2]}, {"a": {"count_lte": 1}})

    def test_combinators(self):
        self.ok({"s": "B"}, {"s": {"one_of": ["A", "B"]}})
        self.bad({"s": "C"}, {"s": {"one_of": ["A", "B"]}})
        self.ok({}, {"h": {"any_of": [{"absent": True}, {"type": "array", "count": 0}]}})
        self.ok({"h": []}, {"h": {"any_of": [{"absent": True}, {"type": "array", "count": 0}]}})
        self.bad({"h": [1]}, {"h": {"any_of": [{"absent": True}, {"type": "array", "count": 0}]}})
        self.ok({"s": "x"}, {"s": {"not": {"type": "number"}}})
        self.ok({"s": "abc"}, {"s": {"all_of": [{"type": "string"}, {"contains": "b"}]}})
        self.ok({"task": {"a": 1}}, {"one_of": [{"message": {"exists": True}},
                                               {"task": {"a": 1}}]})

    def test_arrays(self):
        self.ok({"a": [{"x": 1}, {"x": 2}]}, {"a": [{"x": 1}]})
        self.bad({"a": []}, {"a": [{"x": 1}]})
        self.ok({"a": [{"x": 1}, {"x": 2}]}, {"a": {"items": {"x": {"type": "number"}}}})
        self.bad({"a": [{"x": 1}, {"x": "2"}]}, {"a": {"items": {"x": {"type": "number"}}}})

    def test_paths(self):
        doc = {"task": {"artifacts": [{"parts": [{"text": "a"}, {"data": 1}]},
                                      {"parts": [{"text": "b"}]}]}}
        self.assertEqual(resolve(doc, "task.artifacts[*].parts[*].text"), ["a", "b"])
        self.assertEqual(resolve(doc, "task.artifacts[1].parts[0].text"), ["b"])
        self.assertEqual(resolve(doc, "task.nothing"), [])
        self.assertEqual(resolve({"error": {"data": [{"@type": "x"}]}}, "error.data[*]"),
                         [{"@type": "x"}])

    def test_until_and_ordering(self):
        root = {"status": {"state": "TASK_STATE_COMPLETED"}}
        self.assertIs(until_holds("status.state in [TASK_STATE_COMPLETED, TASK_STATE_FAILED]",
                                  root), True)
        self.assertEqual(until_holds("status.state == TASK_STATE_WORKING", root),
                         "TASK_STATE_COMPLETED")
        self.assertIs(until_holds("status.state != TASK_STATE_WORKING", root), True)
        ev = lambda s: {"statusUpdate": {"status": {"state": s}}}  # noqa: E731
        check_monotonic("s", [{"task": {"status": {"state": "TASK_STATE_SUBMITTED"}}},
                              ev("TASK_STATE_WORKING"), ev("TASK_STATE_INPUT_REQUIRED"),
                              ev("TASK_STATE_WORKING"), ev("TASK_STATE_COMPLETED")])
        with self.assertRaises(StepFailed):
            check_monotonic("s", [ev("TASK_STATE_COMPLETED"), ev("TASK_STATE_WORKING")])
        with self.assertRaises(StepFailed):
            check_monotonic("s", [ev("TASK_STATE_WORKING"), ev("TASK_STATE_SUBMITTED")])

    def test_event_view(self):
        view = event_view({"statusUpdate": {"status": {"state": "S"}}})
        self.ok(view, {"status": {"state": "S"}})
        self.ok(view, {"status_update": {"status": {"state": "S"}}})
        self.bad(view, {"artifact": {"exists": True}})


if __name__ == "__main__":
    unittest.main()
