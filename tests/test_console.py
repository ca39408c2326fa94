"""The agent console (GET / in a browser): what the page is, in process, and
what a person does with it, in a real browser (Debian's Chromium, driven by
Selenium through Debian's chromedriver) against a real threaded server.

The browser tests are named test_browser_* (CI runs them once: -k browser_).
Screenshots of them go to test-artifacts/ (or $A2A_ARTIFACTS)."""

import base64
import hashlib
import json
import os
import re
import shutil
import time

import pytest

from harness import ROOT, Live, need
import a2a_min

HTML = {"accept": "text/html,application/xhtml+xml"}


def page_of(server, headers=HTML):
    return server.handle_http("GET", "/", {}, headers, b"", "http://127.0.0.1:8000")


def boot_of(body):
    found = re.search(rb'<script type="application/json" id="boot">(.*?)</script>', body, re.S)
    return json.loads(found.group(1))


# -- the page, in process ---------------------------------------------------------------

def test_a_browser_gets_the_console_and_curl_the_plain_help():
    server = a2a_min.demo_server()
    page = page_of(server)
    assert page.status == 200
    assert dict(page.headers)["Content-Type"] == "text/html; charset=utf-8"
    assert b"<textarea" in page.body and boot_of(page.body)["card"]["name"] == "a2a_min echo"
    for headers in ({}, {"accept": "*/*"}, {"accept": "text/plain"}):
        plain = page_of(server, headers)
        assert dict(plain.headers)["Content-Type"] == "text/plain; charset=utf-8"
        assert b"curl -s" in plain.body and b"<" not in plain.body
    assert ("Vary", "Accept") in page.headers and ("Vary", "Accept") in plain.headers


def test_console_false_gives_browsers_the_plain_help_too():
    page = page_of(a2a_min.demo_server(console=False))
    assert dict(page.headers)["Content-Type"] == "text/plain; charset=utf-8"
    assert page.body.startswith(b"a2a_min echo: an A2A 1.0 agent")


def test_the_policy_admits_exactly_the_inline_style_and_script():
    page = page_of(a2a_min.demo_server())
    policy = dict(page.headers)["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    body = page.body.decode()
    scripts = re.findall(r"<script>(.*?)</script>", body, re.S)
    styles = re.findall(r"<style>(.*?)</style>", body, re.S)
    assert len(scripts) == 1 and len(styles) == 1
    for text, directive in ((scripts[0], "script-src"), (styles[0], "style-src")):
        digest = base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in policy
    # Nothing from elsewhere: no external scripts, styles, images or fonts.
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", body)
    assert " style=" not in body and "innerHTML" not in body


def test_the_data_block_cannot_close_its_script():
    server = a2a_min.Server(lambda text: text, name="</script><script>alert(1)</script>")
    body = page_of(server).body
    assert body.count(b"</script>") == 2              # the data block's and the script's own
    assert boot_of(body)["card"]["name"] == "</script><script>alert(1)</script>"


def test_the_counters_are_shown_only_without_authentication():
    open_boot = boot_of(page_of(a2a_min.demo_server()).body)
    assert open_boot["stats"]["live_tasks"] == 0 and "by_caller" not in open_boot["stats"]["push"]
    guarded = a2a_min.demo_server(authenticate=a2a_min.BearerAuth({"s3cret": "alice"}))
    boot = boot_of(page_of(guarded).body)
    assert boot["stats"] is None and "authentication" in boot["statsWhy"]
    assert "securitySchemes" in boot["card"]


def test_the_console_changes_no_answer_a_client_gets():
    server = a2a_min.demo_server()
    for path in ("/.well-known/agent-card.json", "/tasks"):
        headers = {"a2a-version": "1.0"}
        plain = server.handle_http("GET", path, {}, headers, b"", "http://127.0.0.1:8000")
        html = server.handle_http("GET", path, {}, {**headers, **HTML}, b"", "http://127.0.0.1:8000")
        assert plain.status == html.status == 200
        assert json.loads(plain.body) == json.loads(html.body)


# -- a person with a browser -------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = os.environ.get("A2A_ARTIFACTS") or os.path.join(ROOT, "test-artifacts")


@pytest.fixture(scope="module")
def browser():
    need(CHROMIUM, "the browser tests need Debian's chromium (apt-get install chromium)")
    need(CHROMEDRIVER, "the browser tests need Debian's chromedriver "
                       "(apt-get install chromium-driver)")
    need("selenium", "the browser tests need selenium (the test extra)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--no-first-run", "--disable-extensions", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--metrics-recording-only",
                 "--disable-default-apps", "--window-size=1280,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(20)
    os.makedirs(ARTIFACTS, exist_ok=True)
    yield driver
    driver.quit()


@pytest.fixture
def demo():
    running = Live(a2a_min.demo_server(), timeout=5)
    yield running
    running.close()


def wait_for(driver, condition, what, timeout=10):
    """Until ``condition(driver)``; an element the page replaced while the
    condition read it (the counters are redrawn whole) is read again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, timeout, ignored_exceptions=(
        StaleElementReferenceException,)).until(lambda d: condition(d), message=what)


def text_of(driver, element_id):
    return driver.find_element("id", element_id).text


def at_width(driver, width):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})


def open_console(driver, live, width=1280):
    at_width(driver, width)
    driver.get(live.url + "/")
    wait_for(driver, lambda d: text_of(d, "name") and "curl" in text_of(d, "send-curl"),
             "the page showed the card and the send's curl line")
    driver.get_log("browser")                          # (start from a clean log)


def problems_logged(driver):
    """What the page logged as errors: CSP violations, script errors."""
    return [entry["message"] for entry in driver.get_log("browser")
            if entry["level"] in ("SEVERE", "ERROR")]


def send(driver, text):
    box = driver.find_element("id", "text")
    box.clear()
    box.send_keys(text)
    driver.find_element("id", "send").click()


def test_browser_send_see_the_events_with_ids_and_the_task_completed(browser, demo):
    open_console(browser, demo)
    assert text_of(browser, "name") == "a2a_min echo"
    assert "Echo" in text_of(browser, "skills") and "streaming: yes" in text_of(browser, "capabilities")
    send(browser, "hello console")
    wait_for(browser, lambda d: "COMPLETED" in text_of(d, "task"), "the task reached COMPLETED")
    events = text_of(browser, "events")
    assert re.search(r"^\[0\] task \S+ SUBMITTED", events, re.M), events
    assert re.search(r"^\[\d+\] status WORKING", events, re.M), events
    assert re.search(r"^\[\d+\] artifact \S+: You$", events, re.M), events   # (in chunks)
    assert re.search(r"^\[\d+\] artifact \S+ \(appended\): console$", events, re.M), events
    assert re.search(r"^\[\d+\] status COMPLETED", events, re.M), events
    task = text_of(browser, "task")
    assert "You said: hello console" in task and "user: hello console" in task
    assert "null" not in task and "undefined" not in task
    curl = text_of(browser, "send-curl")
    assert curl.startswith(f"curl -sN '{demo.url}/'") and "SendStreamingMessage" in curl
    # The task is the list's first, and the server has it.
    first = browser.find_element("css selector", "#tasks button")
    assert "COMPLETED" in first.text
    task_id = first.get_attribute("data-task")
    assert demo.rpc("GetTask", {"id": task_id})["result"]["status"]["state"] == \
        "TASK_STATE_COMPLETED"
    assert problems_logged(browser) == []
    browser.save_screenshot(os.path.join(ARTIFACTS, "console-1280-sent.png"))


def test_browser_open_a_task_from_the_list(browser, demo):
    ids = []
    for i in range(3):            # (2 ms apart: tasks of one millisecond have no order of age)
        time.sleep(0.002)
        ids.append(demo.rpc("SendMessage", {"message": {
            "messageId": f"m{i}", "role": "ROLE_USER", "parts": [{"text": f"number {i}"}]}}
        )["result"]["task"]["id"])
    open_console(browser, demo)
    wait_for(browser, lambda d: len(d.find_elements("css selector", "#tasks button")) == 3,
             "the list showed the three tasks")
    rows = browser.find_elements("css selector", "#tasks button")
    assert [r.get_attribute("data-task") for r in rows] == ids[::-1]      # newest first
    rows[2].click()
    wait_for(browser, lambda d: ids[0] in text_of(d, "task"), "the oldest task opened")
    assert "You said: number 0" in text_of(browser, "task")
    assert '"GetTask"' in text_of(browser, "task-curl")
    assert problems_logged(browser) == []


def test_browser_cancel_a_waiting_task_and_reply_to_another(browser, demo):
    open_console(browser, demo)
    send(browser, "wait")
    wait_for(browser, lambda d: "INPUT_REQUIRED" in text_of(d, "task"), "the task asked for input")
    task_id = browser.find_element("css selector", "#tasks button").get_attribute("data-task")
    browser.find_element("id", "cancel").click()
    wait_for(browser, lambda d: "CANCELED" in text_of(d, "task"), "the task was canceled")
    assert '"CancelTask"' in text_of(browser, "task-curl")
    assert demo.rpc("GetTask", {"id": task_id})["result"]["status"]["state"] == \
        "TASK_STATE_CANCELED"
    assert not browser.find_element("id", "cancel").is_enabled()
    # Another one waits; "Reply to this task" continues it.
    send(browser, "wait")
    wait_for(browser, lambda d: d.find_elements("id", "reply"), "the task offered a reply")
    browser.find_element("id", "reply").click()
    send(browser, "the rest")
    wait_for(browser, lambda d: "COMPLETED" in text_of(d, "task"), "the reply completed it")
    assert "You said: the rest" in text_of(browser, "task")
    assert problems_logged(browser) == []


def test_browser_subscribe_follows_a_waiting_task_into_its_next_turn(browser, demo):
    open_console(browser, demo)
    send(browser, "wait")
    wait_for(browser, lambda d: d.find_elements("id", "subscribe"), "the task opened")
    task_id = browser.find_element("css selector", "#tasks button").get_attribute("data-task")
    browser.find_element("id", "subscribe").click()
    wait_for(browser, lambda d: "INPUT_REQUIRED" in text_of(d, "task-events"),
             "the subscription showed the task")
    assert "tasks/" not in text_of(browser, "task-curl")      # (JSON-RPC: one path)
    assert '"SubscribeToTask"' in text_of(browser, "task-curl")
    demo.rpc("SendMessage", {"message": {"messageId": "more", "role": "ROLE_USER",
                                         "taskId": task_id, "parts": [{"text": "go on"}]}})
    wait_for(browser, lambda d: "COMPLETED" in text_of(d, "task-events"),
             "the subscription followed the next turn to its end")
    followed = text_of(browser, "task-events")
    assert re.search(r"^\[\d+\] task \S+ INPUT_REQUIRED", followed, re.M), followed
    assert re.search(r"^\[\d+\] artifact \S+ \(appended\): on$", followed, re.M), followed


def test_browser_the_http_json_binding_and_the_keyboard(browser, demo):
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select
    open_console(browser, demo)
    Select(browser.find_element("id", "binding")).select_by_value("HTTP+JSON")
    box = browser.find_element("id", "text")
    box.send_keys("over rest")
    assert f"curl -sN '{demo.url}/message:stream'" in text_of(browser, "send-curl")
    box.send_keys(Keys.CONTROL, Keys.ENTER)                # (Ctrl+Enter sends)
    wait_for(browser, lambda d: "COMPLETED" in text_of(d, "task"), "the task completed over REST")
    assert f"curl -s '{demo.url}/tasks/" in text_of(browser, "task-curl")
    assert f"curl -s '{demo.url}/tasks?pageSize=20'" in text_of(browser, "list-curl")
    assert "You said: over rest" in text_of(browser, "task")
    # Every control is reachable with Tab.
    reached = set()
    body = browser.find_element("tag name", "body")
    body.click()
    for _ in range(40):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        reached.add(browser.switch_to.active_element.get_attribute("id"))
    assert {"binding", "text", "continue", "send", "refresh"} <= reached
    assert problems_logged(browser) == []


def test_browser_a_token_when_the_card_asks_for_one(browser):
    server = a2a_min.demo_server(authenticate=a2a_min.BearerAuth({"s3cret": "alice"}))
    live = Live(server, timeout=5)
    try:
        at_width(browser, 1280)
        browser.get(live.url + "/")
        wait_for(browser, lambda d: d.find_element("id", "token").is_displayed(),
                 "the page asked for a token")
        wait_for(browser, lambda d: "-32" in text_of(d, "list-error") or "401" in
                 text_of(d, "list-error") or "uthentic" in text_of(d, "list-error"),
                 "listing without a token said why it failed")
        send(browser, "no token")
        wait_for(browser, lambda d: text_of(d, "send-error"), "sending without a token failed")
        browser.find_element("id", "token").send_keys("s3cret")
        assert '-H "Authorization: $A2A_AUTH"' in text_of(browser, "send-curl")
        assert "A2A_AUTH='Bearer <token>'" in text_of(browser, "auth-how")
        assert "s3cret" not in text_of(browser, "send-curl")
        send(browser, "with token")
        wait_for(browser, lambda d: "COMPLETED" in text_of(d, "task"), "the token was accepted")
        assert "with token" in text_of(browser, "send-curl")      # the line of what was sent
        assert "Hidden" in text_of(browser, "stats")
    finally:
        live.close()


def test_browser_the_curl_line_quotes_what_the_card_says(browser, tmp_path):
    """A card's auth scheme is the agent's text: pasted, the curl line must run
    nothing of it (here, with curl a shell function that prints its words)."""
    import subprocess
    auth = a2a_min.BearerAuth({"s3cret": "alice"})
    auth.security_schemes = {"bearer": {"httpAuthSecurityScheme": {
        "scheme": "Bearer $(touch PWNED) `touch PWNED2`"}}}
    live = Live(a2a_min.demo_server(authenticate=auth), timeout=5)
    try:
        at_width(browser, 1280)
        browser.get(live.url + "/")
        wait_for(browser, lambda d: d.find_element("id", "token").is_displayed(),
                 "the page asked for a token")
        browser.find_element("id", "token").send_keys("tok")
        line = browser.find_element("css selector", "#send-curl pre").text
    finally:
        live.close()
    words = subprocess.run(["bash", "-c", 'curl() { printf "%s\\n" "$@"; }; ' + line],
                           cwd=tmp_path, env={"A2A_AUTH": "Bearer tok", "PATH": os.environ["PATH"]},
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert not list(tmp_path.iterdir()), "pasting the curl line ran the card's text"
    assert "Authorization: Bearer tok" in words, words            # (the card's text not in it)


@pytest.mark.parametrize("width", [360, 375, 1280, 1600])
def test_browser_nothing_is_cut_off_at_phone_and_desktop_widths(browser, demo, width):
    demo.rpc("SendMessage", {"message": {"messageId": "long", "role": "ROLE_USER", "parts": [
        {"text": "a-long-unbroken-word-" * 12}]}})
    open_console(browser, demo, width)
    send(browser, "wait")
    wait_for(browser, lambda d: "INPUT_REQUIRED" in text_of(d, "task"), "the task opened")
    overflow = browser.execute_script("""
        const doc = document.documentElement;
        const wide = [...document.querySelectorAll("body *")].filter(
            (e) => e.getBoundingClientRect().right > doc.clientWidth + 1
                   || e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== "visible")
            .map((e) => e.tagName + "#" + e.id + "." + e.className);
        return {page: doc.scrollWidth, view: doc.clientWidth, wide: wide};""")
    browser.save_screenshot(os.path.join(ARTIFACTS, f"console-{width}.png"))
    assert overflow["page"] <= overflow["view"], overflow
    assert overflow["wide"] == [], overflow
    assert problems_logged(browser) == []


def test_browser_files_data_and_direct_messages_are_shown_sensibly(browser):
    """An agent whose artifacts hold a file by URL, a file by content, data and
    markup (shown as text, never run), and one that answers with a Message."""
    def agent(ctx):
        if ctx.text == "direct":
            yield a2a_min.agent_message("a direct reply")
            return
        yield a2a_min.artifact_update([
            a2a_min.file_part(url="https://example.com/report.pdf", filename="report.pdf",
                              media_type="application/pdf"),
            a2a_min.file_part(raw=b"x" * 300, filename="blob.bin"),
            a2a_min.data_part({"answer": 42, "list": [1, 2]}),
            a2a_min.text_part("<img src=x onerror=alert(1)>")], name="results")
    live = Live(a2a_min.Server(agent, name="parts"), timeout=5)
    try:
        at_width(browser, 1280)
        browser.get(live.url + "/")
        wait_for(browser, lambda d: text_of(d, "name") == "parts", "the page loaded")
        send(browser, "show me")
        wait_for(browser, lambda d: "COMPLETED" in text_of(d, "task"), "the task completed")
        task = text_of(browser, "task")
        assert "results:" in task
        assert "file report.pdf (application/pdf): https://example.com/report.pdf" in task
        assert "file blob.bin: 300 bytes" in task
        assert '"answer": 42' in task
        assert "<img src=x onerror=alert(1)>" in task               # as text
        assert browser.find_elements("css selector", "#task img") == []
        link = browser.find_element("css selector", "#task a")
        assert link.get_attribute("href") == "https://example.com/report.pdf"
        assert link.get_attribute("rel") == "noopener noreferrer"
        send(browser, "direct")
        wait_for(browser, lambda d: "message: a direct reply" in text_of(d, "events"),
                 "the direct message was shown")
        assert problems_logged(browser) == []
    finally:
        live.close()


# -- issue 33: what a newcomer ran into ----------------------------------------------------

def test_browser_the_list_shows_the_random_end_of_each_id(browser, demo):
    """Version 7 UUIDs made in the same minute share their first characters
    (the time): the list shows each id's end, and the whole id as a title."""
    ids = [demo.rpc("SendMessage", {"message": {"messageId": f"m{i}", "role": "ROLE_USER",
                                                 "parts": [{"text": f"n{i}"}]}}
                    )["result"]["task"]["id"] for i in range(3)]
    assert len({task_id[:8] for task_id in ids}) == 1          # (what made the first 8 useless)
    open_console(browser, demo)
    wait_for(browser, lambda d: len(d.find_elements("css selector", "#tasks code")) == 3,
             "the list showed the three tasks")
    shown = [(c.text, c.get_attribute("title"))
             for c in browser.find_elements("css selector", "#tasks code")]
    # ListTasks' order, newest status first: tasks made in one millisecond share
    # their timestamp, and come in the order of their ids, not of their making.
    listed = [task["id"] for task in demo.rpc("ListTasks", {})["result"]["tasks"]]
    assert sorted(listed) == sorted(ids)
    assert [title for _, title in shown] == listed
    assert len({text for text, _ in shown}) == 3, shown            # told apart
    for (text, _), task_id in zip(shown, listed):
        assert task_id.endswith(text.lstrip("\u2026")) and len(text.lstrip("\u2026")) >= 12


def test_browser_cancel_keeps_the_open_subscription(browser, demo):
    """The subscriber is where CANCELED arrives: Cancel must not wipe it."""
    open_console(browser, demo)
    send(browser, "wait")
    wait_for(browser, lambda d: d.find_elements("id", "subscribe"), "the task opened")
    browser.find_element("id", "subscribe").click()
    wait_for(browser, lambda d: "INPUT_REQUIRED" in text_of(d, "task-events"),
             "the subscription showed the task")
    browser.find_element("id", "cancel").click()
    wait_for(browser, lambda d: "CANCELED" in text_of(d, "task-events"),
             "the subscription showed CANCELED, after Cancel")
    followed = text_of(browser, "task-events")
    assert re.search(r"^\[\d+\] task \S+ INPUT_REQUIRED", followed, re.M), followed
    assert re.search(r"^\[\d+\] status CANCELED", followed, re.M), followed
    assert "CANCELED" in text_of(browser, "task")
    assert problems_logged(browser) == []


def stat(driver, name):
    for row in driver.find_elements("css selector", "#stats tr"):
        cells = row.find_elements("tag name", "td")
        if cells and cells[0].text == name:
            return cells[1].text
    return None


def test_browser_the_counters_follow_send_and_refresh(browser, demo):
    open_console(browser, demo)
    assert stat(browser, "store.tasks") == "0"
    send(browser, "count me")
    wait_for(browser, lambda d: "COMPLETED" in text_of(d, "task"), "the task completed")
    wait_for(browser, lambda d: stat(d, "store.tasks") == "1", "the counters showed the task")
    demo.rpc("SendMessage", {"message": {"messageId": "x", "role": "ROLE_USER",
                                         "parts": [{"text": "elsewhere"}]}})
    browser.find_element("id", "refresh").click()
    wait_for(browser, lambda d: stat(d, "store.tasks") == "2", "Refresh read the counters again")
    assert problems_logged(browser) == []


def test_browser_a_task_tapped_on_a_phone_shows_its_header(browser, demo):
    for i in range(8):
        demo.rpc("SendMessage", {"message": {"messageId": f"p{i}", "role": "ROLE_USER",
                                             "parts": [{"text": f"phone {i}"}]}})
    open_console(browser, demo, 390)
    try:
        wait_for(browser, lambda d: len(d.find_elements("css selector", "#tasks button")) == 8,
                 "the list showed the tasks")
        row = browser.find_elements("css selector", "#tasks button")[7]
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
        row.click()
        wait_for(browser, lambda d: "phone 0" in text_of(d, "task"), "the task opened")
        wait_for(browser, lambda d: d.execute_script(
            "const r = document.querySelector('#task p').getBoundingClientRect();"
            "return r.top >= 0 && r.bottom <= innerHeight;"), "the task's header is in view")
        browser.save_screenshot(os.path.join(ARTIFACTS, "console-390-tapped.png"))
    finally:
        at_width(browser, 1280)


def test_browser_ctrl_enter_is_offered_only_with_a_keyboard(browser, demo):
    open_console(browser, demo)
    assert "Ctrl+Enter" in browser.find_element("id", "text").get_attribute("placeholder")
    browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled",
                            {"enabled": True, "maxTouchPoints": 5})
    try:
        open_console(browser, demo, 390)
        assert browser.execute_script("return matchMedia('(pointer: coarse)').matches")
        placeholder = browser.find_element("id", "text").get_attribute("placeholder")
        assert placeholder and "Ctrl+Enter" not in placeholder, placeholder
    finally:
        browser.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})
        at_width(browser, 1280)
