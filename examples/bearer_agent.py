"""An agent that only answers callers with a bearer token.

    python3 examples/bearer_agent.py [PORT]    # http://127.0.0.1:8001/

    curl -s localhost:8001/tasks -H 'A2A-Version: 1.0'                    # 401
    curl -s localhost:8001/tasks -H 'A2A-Version: 1.0' \\
         -H 'Authorization: Bearer alice-secret'                          # alice's tasks

Each token names a principal; a principal sees only its own tasks (another
caller's task answers exactly like a missing one). The card advertises the
scheme (securitySchemes), and the extended card greets the caller by name.
In production, load the tokens from your secret store, never from source.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import a2a_min  # noqa: E402

TOKENS = {"alice-secret": "alice", "bob-secret": "bob"}


def agent(ctx):
    return f"Hello {ctx.caller.principal}, you said: {ctx}"


def make_server():
    return a2a_min.Server(
        agent, name="Private echo", description="Echoes, for known callers only.",
        authenticate=a2a_min.BearerAuth(TOKENS),
        extended_card=lambda call: {"description": f"Echoes, for {call.principal}."})


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", nargs="?", type=int, default=8001, help="default 8001")
    a2a_min.serve(make_server(), port=parser.parse_args().port,
                  on_ready=lambda httpd: print("bearer agent on http://%s:%d/" %
                                               httpd.server_address[:2], flush=True))
