"""a2a_catalog: the catalogs of the agents an a2a_min server serves.

An agent card (section 8.2) describes one agent, at
/.well-known/agent-card.json. A host that serves several (the default agent,
and each one mounted at a tenant with Server.mount) lists them in two
well-known documents, which a2a_min answers with this module when it is
beside a2a_min.py (it is imported at the first request for one of them):

- /.well-known/api-catalog (RFC 9727): a linkset (RFC 9264) whose anchor is
  the catalog itself, with an ``item`` link to each API; each API then has
  its own entry, ``service-desc`` pointing at the document that describes it:
  here an agent card. A mounted agent is one more API: its tenant's
  HTTP+JSON routes, /{tenant}/..., described by its card at
  /{tenant}/.well-known/agent-card.json.
- /.well-known/ai-catalog.json (the AI Catalog, ``application/ai-catalog+json``,
  specification 1.0 of Agent-Card/ai-catalog, referenced by A2A#2240): a
  ``specVersion``, the ``host``, and one entry per agent of type
  ``application/a2a-agent-card+json`` with the ``url`` of its card. The
  identifiers are ``urn:air:{host}:a2a:default`` for the default agent and
  ``urn:air:{host}:a2a:tenant:{tenant}`` for a mounted one: the two shapes
  never collide, whatever the tenants are called.

Well-known URIs exist only at an origin's root (RFC 8615): a tenant gets no
catalog of its own, and every answer's Link header names the API catalog.
"""

__all__ = ["API_CATALOG_TYPE", "AI_CATALOG_TYPE", "api_catalog", "ai_catalog", "response"]

from urllib.parse import urlsplit

import a2a_min
# The second tier (a2a_min.COMPANION_API): what the card's answer is made of.
from a2a_min import _CARD_PATH, _JSON, _LINK, _discovery_headers, _json_body

API_CATALOG_TYPE = 'application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"'
AI_CATALOG_TYPE = "application/ai-catalog+json"


def _base(server, base_url):
    return (server.public_url or base_url or "").rstrip("/")


def _card_path(server):
    """Where the default agent's card is: under single_path, if the server has one."""
    return (server.single_path or "").rstrip("/") + _CARD_PATH


def api_catalog(server, base_url=None):
    """The RFC 9727 linkset of ``server`` reached at ``base_url``, as a dict."""
    base = _base(server, base_url)
    apis = {}                                    # url -> [its card's URL, bindings...]
    for interface in server.agent_card(base_url)["supportedInterfaces"]:
        if interface["url"].startswith(("http://", "https://")):
            apis.setdefault(interface["url"], [base + _card_path(server)]).append(
                interface["protocolBinding"])
    for tenant in server.mounts:
        apis[f"{base}/{tenant}"] = [f"{base}/{tenant}{_CARD_PATH}", "HTTP+JSON"]
    linkset = [{"anchor": base + "/.well-known/api-catalog", "item": [
        {"href": url, "title": f"A2A {a2a_min.PROTOCOL_VERSION} " + " and ".join(about[1:])}
        for url, about in apis.items()]}]
    for url, (card_url, *_) in apis.items():
        entry = {"anchor": url, "service-desc": [{"href": card_url, "type": _JSON}]}
        if server.console and not server.single_path and url == base + "/":
            entry["service-doc"] = [{"href": url, "type": "text/html"}]   # the agent console
        linkset.append(entry)
    return {"linkset": linkset}


def ai_catalog(server, base_url=None):
    """The AI Catalog of ``server`` reached at ``base_url``, as a dict: its
    agent, and each one mounted on it."""
    base = _base(server, base_url)
    host = urlsplit(base).hostname or "localhost"
    agents = [("default", base + _card_path(server), server)] + [
        (f"tenant:{t}", f"{base}/{t}{_CARD_PATH}", agent) for t, agent in server.mounts.items()]
    # displayName restates the card's name: the specification lets it be left
    # out, but ARD readers (the ard-sdk among them) require it, and it cannot
    # drift here, made from the same card at each request.
    return {"specVersion": "1.0", "host": {"displayName": host}, "entries": [
        {"identifier": f"urn:air:{host}:a2a:{name}", "displayName": agent.agent_card()["name"],
         "type": "application/a2a-agent-card+json", "url": url} for name, url, agent in agents]}


_DOCUMENTS = {"/.well-known/api-catalog": (api_catalog, API_CATALOG_TYPE),
              "/.well-known/ai-catalog.json": (ai_catalog, AI_CATALOG_TYPE)}


def response(server, path, base_url=None):
    """The answer to GET ``path`` (one of the two catalogs), as a2a_min.Response:
    cacheable and readable from any origin, as the card is."""
    build, media_type = _DOCUMENTS[path]
    return a2a_min.Response(200, [("Content-Type", media_type), _LINK,
                                  *_discovery_headers(server)],
                            _json_body(build(server, base_url)))
