"""a2a_console: the agent console, the page a browser gets from an a2a_min server.

A browser that asks an a2a_min server's JSON-RPC path for HTML (Accept:
text/html) gets this page when this file is beside a2a_min.py and the
server has ``console=True`` (the default); without it, or with
``console=False``, the browser gets the plain-text help that curl gets.
Nothing in a2a_min depends on it: it is a page for a person, and an A2A
client in the browser's own JavaScript.

MIT License. Copyright (c) 2026 the a2a_min authors.
"""

__all__ = ["console_response"]

import json

from a2a_min import Response
# The second tier (a2a_min.COMPANION_API): the card as the server answers it.
from a2a_min import _CARD_PATH, _LINK, _card_response


# =============================================================================
# The agent console: GET / in a browser
# =============================================================================
#
# Not protocol, and nothing above depends on it: a page for a person. A
# browser asking the JSON-RPC path for HTML (Accept: text/html) gets one
# self-contained page; curl and every other client keep the plain-text help
# (_help_text), and Server(console=False) gives browsers that text too.
#
# The page is an A2A client written in the browser's own JavaScript, and it
# does only what any client does, so every answer it shows is the one a
# client gets: it summarises the agent card (section 8), sends a message with
# SendStreamingMessage when the card says capabilities.streaming and with
# SendMessage otherwise (sections 3.1.1 and 3.1.2), reads the Server-Sent
# Events itself (section 3.5.2; fetch(), since EventSource cannot POST),
# lists the tasks newest first (ListTasks, 3.1.4), opens one (GetTask),
# follows it (SubscribeToTask) and cancels it (CancelTask), over JSON-RPC or
# HTTP+JSON (sections 9 and 11), and prints beside each action the curl line
# that does the same. With authentication it asks for the token and sends it
# as the card's security scheme says. The server's counters (Server.stats())
# are shown when the server needs no authentication (a page anyone can load
# must not tell strangers about other callers).
#
# The page loads nothing from anywhere: its CSS and script are inline, and
# the Content-Security-Policy admits exactly those two (by their SHA-256),
# lets the script call this origin only, and forbids framing. What the
# server knows (the card, the paths, the counters) travels in a JSON data
# block, which a browser never runs. Agent output is put on the page as text
# (textContent), never as HTML.

_CONSOLE_CSS = """
:root{color-scheme:light dark;--fg:#1d2330;--bg:#fbfbfd;--muted:#5d6675;--line:#d5d9e0;
--box:#f0f2f6;--accent:#1f5fbf;--ok:#1c7c3a;--bad:#b3261e;--wait:#9a6400}
@media (prefers-color-scheme:dark){:root{--fg:#e4e7ec;--bg:#15181d;--muted:#9aa3b2;
--line:#343a45;--box:#1f242c;--accent:#7fb0ff;--ok:#6fcf8f;--bad:#ff8a80;--wait:#ffc46b}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg)}
header,main{max-width:1200px;margin:0 auto;padding:12px 16px}
header{border-bottom:1px solid var(--line)}
h1{font-size:1.35em;margin:.2em 0}h2{font-size:1.05em;margin:0 0 .5em}
main{display:grid;gap:16px;grid-template-columns:minmax(0,1fr)}
@media (min-width:900px){main{grid-template-columns:minmax(0,1fr) minmax(0,1fr)}
.wide{grid-column:1/-1}}
section{border:1px solid var(--line);border-radius:8px;padding:12px;min-width:0}
p{margin:.3em 0}.muted{color:var(--muted)}
a{color:var(--accent)}
pre,code,textarea,input{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:var(--box);padding:8px;
border-radius:6px;margin:.4em 0;max-height:24em;overflow-y:auto}
textarea,input{width:100%;padding:6px;border:1px solid var(--line);border-radius:6px;
background:var(--bg);color:var(--fg)}
button,select{font:inherit;padding:5px 12px;border-radius:6px;border:1px solid var(--accent);
background:var(--accent);color:var(--bg);cursor:pointer;margin:4px 6px 4px 0}
button.plain,select{background:transparent;color:var(--accent)}
button:disabled{opacity:.5;cursor:default}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.row{display:flex;flex-wrap:wrap;align-items:center;gap:4px 10px}
.chips span{display:inline-block;border:1px solid var(--line);border-radius:12px;
padding:0 8px;margin:2px 4px 2px 0;font-size:.9em}
.state{font-weight:600}.s-COMPLETED{color:var(--ok)}
.s-FAILED,.s-CANCELED,.s-REJECTED{color:var(--bad)}
.s-INPUT_REQUIRED,.s-AUTH_REQUIRED,.s-WORKING,.s-SUBMITTED{color:var(--wait)}
ol.events{list-style:none;padding:0;margin:.4em 0;max-height:22em;overflow-y:auto}
ol.events li{border-top:1px solid var(--line);padding:4px 0;overflow-wrap:anywhere}
.sse{color:var(--muted);font-family:ui-monospace,monospace}
ul.tasks{list-style:none;padding:0;margin:0}
ul.tasks button{width:100%;text-align:left;background:transparent;color:var(--fg);
border-color:var(--line);overflow-wrap:anywhere}
.curl{position:relative}.curl pre{padding-right:64px}.curl:has(pre:empty){display:none}
.curl button{position:absolute;top:2px;right:0;padding:2px 8px;font-size:.85em}
.error{color:var(--bad)}
table{border-collapse:collapse}td{padding:1px 10px 1px 0;vertical-align:top}
label{display:block;margin:.4em 0 .2em;font-weight:600}
"""

_CONSOLE_JS = r"""
"use strict";
const boot = JSON.parse(document.getElementById("boot").textContent);
const card = boot.card;
const $ = (id) => document.getElementById(id);
const TERMINAL = ["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED",
                  "TASK_STATE_REJECTED"];
// operation -> [HTTP+JSON verb, path (after the interface's own path), streams?]
const ROUTES = {
  SendMessage: ["POST", "/message:send", false],
  SendStreamingMessage: ["POST", "/message:stream", true],
  GetTask: ["GET", "/tasks/{id}", false],
  ListTasks: ["GET", "/tasks", false],
  CancelTask: ["POST", "/tasks/{id}:cancel", false],
  SubscribeToTask: ["GET", "/tasks/{id}:subscribe", true],
};
let rpcId = 0;
let openTask = null;        // the task shown in "One task" (its id), if any

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}
const shortState = (state) => (state || "TASK_STATE_UNSPECIFIED").replace("TASK_STATE_", "");
// An id as a person tells ids apart: a version 7 UUID begins with its time, the same for every
// task made in the same minute, so its random end is shown (the whole id is its title).
const shortId = (id) => String(id).length <= 13 ? String(id) : "\u2026" + String(id).slice(-12);
const stateChip = (state) => el("span", {class: "state s-" + shortState(state)}, shortState(state));

// -- where each binding answers: the card's own interfaces, on this origin --
const paths = {};
for (const iface of card.supportedInterfaces || []) {
  const binding = iface.protocolBinding;
  if ((binding === "JSONRPC" || binding === "HTTP+JSON") && iface.protocolVersion === "1.0"
      && !(binding in paths)) {
    paths[binding] = new URL(iface.url, location.href).pathname.replace(/\/+$/, "");
  }
}
// -- how the card asks for credentials (section 7): a bearer token, or an API key header --
let auth = null;
for (const scheme of Object.values(card.securitySchemes || {})) {
  if (scheme.httpAuthSecurityScheme) {
    auth = {header: "Authorization", prefix: (scheme.httpAuthSecurityScheme.scheme || "Bearer") + " "};
  } else if (scheme.apiKeySecurityScheme && scheme.apiKeySecurityScheme.location === "header") {
    auth = {header: scheme.apiKeySecurityScheme.name, prefix: ""};
  }
  if (auth) break;
}

// -- one call, and the curl line that makes the same request --
const quote = (text) => "'" + text.replace(/'/g, "'\\''") + "'";
function request(operation, params) {
  const binding = $("binding").value;
  const headers = {"A2A-Version": "1.0"};
  const token = $("token").value.trim();
  if (auth && token) headers[auth.header] = auth.prefix + token;
  let url, method, body;
  if (binding === "JSONRPC") {
    url = (paths.JSONRPC || "") + "/";
    method = "POST";
    body = JSON.stringify({jsonrpc: "2.0", id: ++rpcId, method: operation, params: params});
  } else {
    const [verb, route] = ROUTES[operation];
    url = paths["HTTP+JSON"] + route.replace("{id}", encodeURIComponent(params.id || ""));
    method = verb;
    if (operation === "ListTasks") {
      url += "?" + new URLSearchParams(params).toString();
    } else if (operation === "GetTask" || operation === "SubscribeToTask") {
      // the task's id is in the path; nothing else to send
    } else if (operation === "CancelTask") {
      body = "{}";
    } else {
      body = JSON.stringify(params);
    }
  }
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const streams = ROUTES[operation][2];
  const words = ["curl -s" + (streams ? "N" : "")];
  if (method === "POST" && body === undefined) words.push("-X POST");
  words.push(quote(location.origin + url));
  for (const [name, value] of Object.entries(headers)) {
    // Everything single-quoted but the variable: the card's scheme and header name are the
    // agent's text, and must not run in the shell of whoever pastes the line.
    // The credentials are $A2A_AUTH's, as for the command line's --curl and --auth: an
    // Authorization value ('Bearer <token>'), or a whole header ('X-API-Key: <key>').
    words.push(name === (auth && auth.header)
      ? (name === "Authorization" ? '-H "Authorization: $A2A_AUTH"' : '-H "$A2A_AUTH"')
      : "-H " + quote(name + ": " + value));
  }
  if (body !== undefined) words.push("-d " + quote(body));
  return {url: url, init: {method: method, headers: headers, body: body},
          curl: words.join(" "), binding: binding, streams: streams};
}

function failure(binding, status, answer) {
  const error = answer && answer.error;
  if (!error) return new Error("HTTP " + status);
  const message = (binding === "JSONRPC" ? "JSON-RPC error " + error.code
                   : "HTTP " + status + " " + (error.status || "")) + ": " + error.message;
  return new Error(message);
}

async function call(operation, params, curlBox) {
  const req = request(operation, params);
  showCurl(curlBox, req.curl);
  const response = await fetch(req.url, req.init);
  const answer = await response.json().catch(() => null);
  if (req.binding === "JSONRPC") {
    if (!answer || answer.error || !("result" in answer)) throw failure(req.binding, response.status, answer);
    return answer.result;
  }
  if (!response.ok) throw failure(req.binding, response.status, answer);
  return answer;
}

// A stream: each Server-Sent Event's id and StreamResponse, as they arrive.
async function stream(operation, params, curlBox, onEvent) {
  const req = request(operation, params);
  showCurl(curlBox, req.curl);
  const response = await fetch(req.url, req.init);
  if (!(response.headers.get("Content-Type") || "").startsWith("text/event-stream")) {
    throw failure(req.binding, response.status, await response.json().catch(() => null));
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      let id = null, data = "";
      for (const line of frame.split(/\r?\n/)) {
        if (line.startsWith("id:")) id = line.slice(3).trim();
        else if (line.startsWith("data:")) data += line.slice(5).replace(/^ /, "");
      }
      if (!data) continue;                      // a comment (keep-alive) or a retry hint
      const parsed = JSON.parse(data);
      if (req.binding === "JSONRPC" && parsed.error) throw failure(req.binding, 200, parsed);
      onEvent(id, req.binding === "JSONRPC" ? parsed.result : parsed);
    }
  }
}

// -- showing parts, messages and events --
function partNode(part) {
  if ("text" in part) return el("span", {}, part.text);
  if ("data" in part) return el("pre", {}, JSON.stringify(part.data, null, 2));
  const label = "file " + (part.filename || "") + (part.mediaType ? " (" + part.mediaType + ")" : "");
  if (part.url && /^https?:/i.test(part.url)) {
    return el("span", {}, label + ": ", el("a", {href: part.url, rel: "noopener noreferrer"}, part.url));
  }
  if ("raw" in part) return el("span", {}, label + ": " + Math.floor(part.raw.length * 3 / 4) + " bytes");
  return el("span", {}, label);
}
const partsNode = (parts) => el("span", {}, ...(parts || []).map(partNode));
function messageNode(message) {
  return el("li", {}, el("b", {}, (message.role || "").replace("ROLE_", "").toLowerCase() + ": "),
            partsNode(message.parts));
}
function eventNode(id, event) {
  const sse = el("span", {class: "sse"}, id === null ? "[no id] " : "[" + id + "] ");
  if (event.task) {
    return el("li", {}, sse, "task ", el("code", {}, event.task.id), " ", stateChip(event.task.status.state));
  }
  if (event.statusUpdate) {
    const message = event.statusUpdate.status.message;
    return el("li", {}, sse, "status ", stateChip(event.statusUpdate.status.state),
              message ? el("span", {}, " ", partsNode(message.parts)) : null);
  }
  if (event.artifactUpdate) {
    const update = event.artifactUpdate;
    return el("li", {}, sse, "artifact " + (update.artifact.name || shortId(update.artifact.artifactId))
              + (update.append ? " (appended)" : "") + ": ", partsNode(update.artifact.parts));
  }
  if (event.message) return el("li", {}, sse, "message: ", partsNode(event.message.parts));
  return el("li", {}, sse, JSON.stringify(event));
}
function taskIdOf(event) {
  if (event.task) return event.task.id;
  if (event.statusUpdate) return event.statusUpdate.taskId;
  if (event.artifactUpdate) return event.artifactUpdate.taskId;
  return event.message && event.message.taskId;
}
function showCurl(box, text) {
  const pre = $(box).querySelector("pre");
  pre.textContent = text;
}
function showError(box, error) { $(box).textContent = error ? String(error.message || error) : ""; }

// -- the card --
function showCard() {
  document.title = card.name + " (A2A console)";
  $("name").textContent = card.name;
  $("description").textContent = card.description || "";
  $("version").textContent = "version " + (card.version || "?") + " · A2A 1.0";
  const caps = card.capabilities || {};
  $("capabilities").replaceChildren(...["streaming", "pushNotifications", "extendedAgentCard"].map(
    (cap) => el("span", {}, cap + ": " + (caps[cap] ? "yes" : "no"))));
  $("interfaces").replaceChildren(...(card.supportedInterfaces || []).map(
    (iface) => el("li", {}, iface.protocolBinding + " " + (iface.protocolVersion || "") + " ",
                  el("code", {}, iface.url))));
  $("skills").replaceChildren(...(card.skills || []).map((skill) => el("li", {},
    el("b", {}, skill.name), " ", skill.description || "",
    (skill.examples || []).length ? el("span", {class: "muted"}, " e.g. " + skill.examples.join(", ")) : null)));
  const select = $("binding");
  for (const binding of Object.keys(paths)) select.append(el("option", {value: binding}, binding));
  $("auth").hidden = !auth;
  if (auth) $("auth-how").textContent = "sent as " + auth.header + ": " + auth.prefix + "…; the " +
    "curl lines read $A2A_AUTH, as the command line's --auth: " + (auth.header === "Authorization"
      ? "A2A_AUTH='" + auth.prefix + "<token>'" : "A2A_AUTH='" + auth.header + ": <key>'");
  $("send-how").textContent = caps.streaming ? "SendStreamingMessage (the card says the agent streams)"
                                             : "SendMessage (the card says the agent does not stream)";
}

function showStats() {
  if (!boot.stats) {
    $("stats").replaceChildren(el("p", {class: "muted"}, boot.statsWhy));
    return;
  }
  const rows = [];
  const walk = (prefix, value) => {
    if (value && typeof value === "object" && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value)) walk(prefix ? prefix + "." + key : key, inner);
    } else rows.push(el("tr", {}, el("td", {}, prefix), el("td", {}, String(value))));
  };
  walk("", boot.stats);
  $("stats").replaceChildren(el("table", {}, ...rows));
}

// -- sending --
function sendParams() {
  const message = {messageId: crypto.randomUUID ? crypto.randomUUID() : String(Date.now() + Math.random()),
                   role: "ROLE_USER", parts: [{text: $("text").value}]};
  const taskId = $("continue").value;
  if (taskId) {
    message.taskId = taskId;
    if (openTask && openTask.id === taskId) message.contextId = openTask.contextId;
  }
  return {message: message};
}
async function send() {
  const streaming = !!(card.capabilities || {}).streaming;
  const events = $("events");
  events.replaceChildren();
  showError("send-error", null);
  $("send").disabled = true;
  let taskId = null;
  try {
    if (streaming) {
      await stream("SendStreamingMessage", sendParams(), "send-curl", (id, event) => {
        events.append(eventNode(id, event));
        taskId = taskIdOf(event) || taskId;
      });
    } else {
      const answer = await call("SendMessage", sendParams(), "send-curl");
      events.append(eventNode(null, answer));
      taskId = taskIdOf(answer);
    }
    $("text").value = "";
    $("continue").value = "";
  } catch (error) {
    showError("send-error", error);
  } finally {
    $("send").disabled = false;
  }
  await listTasks();
  refreshStats();
  if (taskId) await openOne(taskId);      // (the send's curl line stays: the request sent)
}
function previewSend() {
  const streaming = !!(card.capabilities || {}).streaming;
  showCurl("send-curl", request(streaming ? "SendStreamingMessage" : "SendMessage", sendParams()).curl);
}

// -- the tasks --
async function listTasks() {
  showError("list-error", null);
  try {
    const answer = await call("ListTasks", {pageSize: 20}, "list-curl");
    const tasks = answer.tasks || [];
    $("tasks").replaceChildren(...tasks.map((task) => {
      const first = (task.history || [])[0];
      const text = first ? (first.parts || []).map((p) => p.text || "").join(" ").slice(0, 80) : "";
      return el("li", {}, el("button", {type: "button", "data-task": task.id,
                                         onclick: () => openOne(task.id).then(reveal)},
                            stateChip(task.status.state), " ",
                            el("code", {title: task.id}, shortId(task.id)), " ", text));
    }));
    if (!tasks.length) $("tasks").replaceChildren(el("li", {class: "muted"}, "No tasks yet: send a message."));
  } catch (error) {
    showError("list-error", error);
  }
}
// A task opened from the list: on a narrow screen "One task" is far above the list; bring its
// header into view.
function reveal() {
  const top = $("h-task").getBoundingClientRect().top;
  if (top < 0 || top > innerHeight - 80) $("h-task").scrollIntoView({block: "start"});
}
// The counters as they are now: the page again (the same origin, no other endpoint), its data block.
async function refreshStats() {
  if (!boot.stats) return;
  try {
    const response = await fetch(location.pathname + location.search,
                                 {headers: {Accept: "text/html"}, cache: "no-store"});
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    boot.stats = JSON.parse(page.getElementById("boot").textContent).stats || boot.stats;
    showStats();
  } catch (error) {                             // (the counters stay as they were)
  }
}
function showTask(task) {
  // The same task again (after Cancel, say): its subscription's events stay, and go on arriving.
  const kept = openTask && openTask.id === task.id ? $("task-events") : null;
  openTask = task;
  const live = !TERMINAL.includes(task.status.state);
  const waits = ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"].includes(task.status.state);
  $("task").replaceChildren(...[
    el("p", {}, el("code", {}, task.id), " ", stateChip(task.status.state),
       task.status.timestamp ? el("span", {class: "muted"}, " " + task.status.timestamp) : null),
    task.status.message ? el("p", {}, partsNode(task.status.message.parts)) : null,
    el("h2", {}, "History"), el("ol", {class: "events"}, ...(task.history || []).map(messageNode)),
    el("h2", {}, "Artifacts"),
    el("ol", {class: "events"}, ...(task.artifacts || []).map((artifact) => el("li", {},
      el("b", {}, (artifact.name || artifact.artifactId) + ": "), partsNode(artifact.parts)))),
    el("div", {class: "row"},
      el("button", {type: "button", id: "subscribe", onclick: () => subscribe(task.id),
                    ...(live ? {} : {disabled: ""})}, "Subscribe"),
      el("button", {type: "button", id: "cancel", onclick: () => cancel(task.id),
                    ...(live ? {} : {disabled: ""})}, "Cancel"),
      waits ? el("button", {type: "button", class: "plain", id: "reply", onclick: () => {
        $("continue").value = task.id; $("text").focus(); previewSend();
      }}, "Reply to this task") : null),
    kept || el("ol", {class: "events", id: "task-events"})].filter((node) => node !== null));
}
// One task's actions: an error is shown beside the task; the list is read again after a change.
async function onTask(work, changes) {
  showError("task-error", null);
  try {
    await work();
  } catch (error) {
    showError("task-error", error);
  }
  if (changes) listTasks();
}
const openOne = (taskId) => onTask(async () => showTask(await call("GetTask", {id: taskId}, "task-curl")));
const cancel = (taskId) => onTask(async () => showTask(await call("CancelTask", {id: taskId}, "task-curl")), true);
function subscribe(taskId) {
  const events = $("task-events");
  return onTask(() => stream("SubscribeToTask", {id: taskId}, "task-curl",
                             (id, event) => events.append(eventNode(id, event))), true);
}

// -- copying a curl line --
for (const box of document.querySelectorAll(".curl")) {
  box.querySelector("button").addEventListener("click", async () => {
    const text = box.querySelector("pre").textContent;
    try {
      await navigator.clipboard.writeText(text);
    } catch (error) {                           // (no clipboard: select it for Ctrl+C)
      getSelection().selectAllChildren(box.querySelector("pre"));
    }
  });
}

showCard();
showStats();
$("send").addEventListener("click", send);
$("refresh").addEventListener("click", () => { listTasks(); refreshStats(); });
// The keyboard's shortcut is offered where there is a keyboard: not where the primary pointer is
// a finger (a phone, a tablet).
if (!matchMedia("(pointer: coarse)").matches) {
  $("text").placeholder = "hello (Ctrl+Enter sends)";
}
$("text").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) send();
});
for (const id of ["text", "continue", "token", "binding"]) $(id).addEventListener("input", previewSend);
$("binding").addEventListener("change", () => { previewSend(); listTasks(); });
previewSend();
listTasks();
"""

_CONSOLE_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>A2A console</title><style>%(css)s</style></head>
<body><header>
<h1 id="name"></h1><p id="description"></p>
<p class="muted"><span id="version"></span> · <a href="%(card_path)s">the agent card (JSON)</a>
· this page's plain-text twin: <code>curl %(origin_hint)s</code></p>
</header>
<main>
<section aria-labelledby="h-send"><h2 id="h-send">Send a message</h2>
<p class="muted" id="send-how"></p>
<div class="row"><label for="binding">Binding</label><select id="binding"></select></div>
<div id="auth" hidden><label for="token">Token</label>
<input id="token" type="password" autocomplete="off" placeholder="the agent asks for credentials">
<p class="muted" id="auth-how"></p></div>
<label for="text">Message</label>
<textarea id="text" rows="3" placeholder="hello"></textarea>
<label for="continue">Continue task (its id; empty starts a new task)</label>
<input id="continue" autocomplete="off">
<div class="row"><button type="button" id="send">Send</button></div>
<p class="error" id="send-error" role="alert"></p>
<div class="curl" id="send-curl"><pre></pre><button type="button" class="plain">Copy</button></div>
<h2>Events</h2><ol class="events" id="events" aria-live="polite"></ol>
</section>
<section aria-labelledby="h-task"><h2 id="h-task">One task</h2>
<p class="error" id="task-error" role="alert"></p>
<div id="task"><p class="muted">Pick a task from the list.</p></div>
<div class="curl" id="task-curl"><pre></pre><button type="button" class="plain">Copy</button></div>
</section>
<section aria-labelledby="h-tasks"><h2 id="h-tasks">Tasks, newest first</h2>
<div class="row"><button type="button" class="plain" id="refresh">Refresh</button></div>
<p class="error" id="list-error" role="alert"></p>
<ul class="tasks" id="tasks"></ul>
<div class="curl" id="list-curl"><pre></pre><button type="button" class="plain">Copy</button></div>
</section>
<section aria-labelledby="h-agent"><h2 id="h-agent">The agent</h2>
<div class="chips" id="capabilities"></div>
<h2>Interfaces</h2><ul id="interfaces"></ul>
<h2>Skills</h2><ul id="skills"></ul>
<h2>Counters</h2><div id="stats"></div>
</section>
</main>
<script type="application/json" id="boot">%(boot)s</script>
<script>%(js)s</script>
</body></html>
"""


def _csp_hash(text):
    import base64
    import hashlib
    return "'sha256-%s'" % base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def console_response(server, headers, base_url):
    """The agent console (HTML) for a browser at ``server``'s JSON-RPC path:
    an a2a_min.Response."""
    import html
    card = json.loads(_card_response(server, {}, base_url).body)
    stats, why = None, "Hidden: this agent requires authentication."
    if server.authenticate is None:
        stats = server.stats()
        stats["push"].pop("by_caller", None)          # (per caller: not for a page)
    boot = {"card": card, "stats": stats, "statsWhy": why}
    # "<" escaped: the data block must not be able to close its <script>.
    text = json.dumps(boot, ensure_ascii=False).replace("<", "\\u003c")
    base = (server.public_url or base_url or "http://127.0.0.1:8000").rstrip("/")
    page = _CONSOLE_HTML % {"css": _CONSOLE_CSS, "js": _CONSOLE_JS, "boot": text,
                            "card_path": _CARD_PATH,
                            "origin_hint": html.escape(base + server.rpc_path)}
    policy = (f"default-src 'none'; script-src {_csp_hash(_CONSOLE_JS)}; style-src "
              f"{_csp_hash(_CONSOLE_CSS)}; connect-src 'self'; base-uri 'none'; "
              "form-action 'none'; frame-ancestors 'none'")
    return Response(200, [("Content-Type", "text/html; charset=utf-8"),
                          ("Content-Security-Policy", policy), ("Vary", "Accept"),
                          ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                          ("Referrer-Policy", "no-referrer"), _LINK], page.encode("utf-8"))
