"""Several agents on one server: a front agent, and two more mounted as tenants.

    python examples/several_agents.py 8000
    curl http://127.0.0.1:8000/.well-known/ai-catalog.json         # the three, by card
    curl http://127.0.0.1:8000/travel/.well-known/agent-card.json  # travel's card
    curl -X POST http://127.0.0.1:8000/travel/message:send -H 'A2A-Version: 1.0' \\
         -H 'Authorization: Bearer traveler' -H 'Content-Type: application/json' \\
         -d '{"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "Oslo"}]}}'

or from the command line, each agent a function that returns a Server:

    python a2a_min.py --port 8000 --agent travel=several_agents:travel \\
                                  --agent billing=several_agents:billing   (in examples/)

Each agent is a tenant (A2A section 3.2.5): /travel/... over HTTP+JSON, the
``tenant`` field over JSON-RPC and gRPC; its card lists the server's
interfaces with that tenant, so a client given /travel finds its way. Each
has its own authentication, limits and tasks: travel's tasks are not found
through billing or the front, whatever the caller.
"""

import sys

import a2a_min


def travel():
    """A travel agent for the holders of the token "traveler"."""
    return a2a_min.Server(lambda text: f"Trains to {text} leave at 9:00 and 17:00.",
                          name="Travel", description="Finds trains.",
                          authenticate=a2a_min.BearerAuth({"traveler": "traveler"}))


def billing():
    """A billing agent for the holders of the token "accountant"."""
    return a2a_min.Server(lambda text: f"Invoice {text}: paid.", name="Billing",
                          description="Answers on invoices.",
                          authenticate=a2a_min.BearerAuth({"accountant": "accountant"}))


def make_server():
    front = a2a_min.Server(lambda text: "Ask /travel or /billing: see "
                           "/.well-known/ai-catalog.json", name="Front desk",
                           description="Says which agent to ask.")
    front.mount("travel", travel())
    front.mount("billing", billing())
    return front


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    a2a_min.serve(make_server(), "127.0.0.1", port)
