"""The test agent speaking 0.3 too, as a Lambda handler for the local runner:
python examples/lambda_local.py PORT --handler v03_app:handler (with tests/
on PYTHONPATH)."""

import os
import sys

sys.path[:0] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                os.path.dirname(os.path.abspath(__file__))]

import a2a_min  # noqa: E402
from harness import scenario_agent  # noqa: E402

handler = a2a_min.lambda_handler(a2a_min.Server(
    scenario_agent, name="0.3 test agent", compat="0.3", push_notifications=True,
    input_modes=("text/plain", "application/octet-stream")))
