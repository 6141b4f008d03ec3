"""Drives a View that `mcpscope app` hosts, in headless Chromium through WebDriver.

Debian's chromium and chromium-driver (no browser is downloaded: the driver and the
browser are given by path, so Selenium Manager is never asked for either). Prints one
JSON object with what the pages showed, for the Rust test to assert on.

    tests/peers/.venv/bin/python tests/clients/app_browser.py SCENARIO URL

SCENARIO: counter (the hand-written View: handshake, input and result, the app's own
tools/call, a refused model-only call, display modes, ui/message, model context,
open-link asked and declined, theme change, isolation probe, close from the host
page), sdk (the ext-apps SDK View: handshake, result, tools/call, display mode,
teardown), bad (the misbehaving View: what it logged, the CSP console messages),
timing (only how long until the View said initialized), forge (a page on another
origin posting to the bridge), reload (the page loaded again mid-session).
"""

import json
import os
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = os.environ.get("MCPSCOPE_TEST_CHROMIUM", "/usr/bin/chromium")
DRIVER = os.environ.get("MCPSCOPE_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT = 20


def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--window-size=1200,900"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=DRIVER), options=opts)


def wait_for(d, what, fn, timeout=WAIT):
    try:
        return WebDriverWait(d, timeout, poll_frequency=0.05).until(lambda _: fn())
    except Exception as e:  # noqa: BLE001 - said with what was awaited
        raise SystemExit(f"app_browser: timed out waiting for {what}: {e}")


def text(d, css):
    els = d.find_elements(By.CSS_SELECTOR, css)
    return els[0].text if els else None


def into_view(d):
    d.switch_to.default_content()
    d.switch_to.frame(d.find_element(By.ID, "sandbox"))
    wait_for(d, "the inner frame", lambda: d.find_elements(By.TAG_NAME, "iframe"))
    d.switch_to.frame(d.find_element(By.TAG_NAME, "iframe"))


def host_status(d):
    d.switch_to.default_content()
    return d.find_element(By.TAG_NAME, "body").get_attribute("data-app-status")


def click_in_view(d, id_):
    into_view(d)
    d.find_element(By.ID, id_).click()


def console(d):
    return [e.get("message", "") for e in d.get_log("browser")]


def counter(d, url, out):
    t0 = time.monotonic()
    d.get(url)
    wait_for(d, "the host page ready", lambda: host_status(d) == "ready")
    out["ready_ms"] = round((time.monotonic() - t0) * 1000)
    into_view(d)
    wait_for(d, "the View initialized", lambda: text(d, "#status") == "initialized")
    wait_for(d, "the tool result", lambda: "tool-result" in (text(d, "#log") or ""))
    out["value_after_result"] = text(d, "#value")
    out["theme"] = text(d, "#theme")
    out["mode"] = text(d, "#mode")
    d.find_element(By.ID, "inc").click()
    wait_for(d, "increment's answer", lambda: (text(d, "#answer") or "").startswith("increment"))
    out["increment_answer"] = text(d, "#answer")
    out["value_after_increment"] = text(d, "#value")
    d.find_element(By.ID, "secret").click()
    wait_for(d, "the model-only call's answer", lambda: (text(d, "#answer") or "").startswith("secret"))
    out["secret_answer"] = text(d, "#answer")
    d.find_element(By.ID, "fullscreen").click()
    wait_for(d, "fullscreen", lambda: text(d, "#mode") == "fullscreen")
    wait_for(d, "the context change", lambda: "displayMode" in (text(d, "#log") or ""))
    d.switch_to.default_content()
    out["host_display_mode"] = d.find_element(By.TAG_NAME, "body").get_attribute("data-display-mode")
    click_in_view(d, "inline")
    wait_for(d, "inline", lambda: text(d, "#mode") == "inline")
    d.find_element(By.ID, "message").click()
    wait_for(d, "ui/message's answer", lambda: (text(d, "#answer") or "").startswith("message"))
    out["message_answer"] = text(d, "#answer")
    d.find_element(By.ID, "context").click()
    wait_for(d, "the model context's answer", lambda: (text(d, "#answer") or "").startswith("context"))
    d.find_element(By.ID, "link").click()
    d.switch_to.default_content()
    wait_for(d, "the open-link question", lambda: d.find_element(By.ID, "ask").is_displayed())
    out["asked"] = d.find_element(By.ID, "ask-text").text
    d.find_element(By.ID, "ask-deny").click()
    into_view(d)
    wait_for(d, "open-link's answer", lambda: (text(d, "#answer") or "").startswith("link"))
    out["link_answer"] = text(d, "#answer")
    d.find_element(By.ID, "probe").click()
    wait_for(d, "the probe", lambda: "violations:" in (text(d, "#probe-result") or ""))
    out["probe"] = text(d, "#probe-result")
    d.switch_to.default_content()
    d.find_element(By.ID, "theme").click()
    into_view(d)
    wait_for(d, "the dark theme", lambda: text(d, "#theme") == "dark")
    out["theme_after_switch"] = text(d, "#theme")
    d.switch_to.default_content()
    d.find_element(By.ID, "close").click()
    wait_for(d, "the View closed", lambda: host_status(d) == "closed")
    out["closed"] = True
    out["console"] = console(d)


def sdk(d, url, out):
    d.get(url)
    wait_for(d, "the host page ready", lambda: host_status(d) == "ready")
    into_view(d)
    wait_for(d, "the SDK View initialized", lambda: text(d, "#status") == "initialized")
    wait_for(d, "the tool result", lambda: text(d, "#value") == "5")
    out["value_after_result"] = text(d, "#value")
    d.find_element(By.ID, "inc").click()
    wait_for(d, "increment's answer", lambda: text(d, "#answer"))
    out["increment_answer"] = text(d, "#answer")
    d.find_element(By.ID, "fullscreen").click()
    wait_for(d, "fullscreen", lambda: text(d, "#mode") == "fullscreen")
    out["mode"] = text(d, "#mode")
    d.switch_to.default_content()
    d.find_element(By.ID, "close").click()
    wait_for(d, "the View closed", lambda: host_status(d) == "closed")
    out["closed"] = True
    out["console"] = console(d)


def bad(d, url, out):
    d.get(url)
    wait_for(d, "the sandbox loaded", lambda: host_status(d) in ("initializing", "ready"))
    into_view(d)
    wait_for(d, "the bad View done", lambda: text(d, "#status") == "done")
    out["log"] = text(d, "#log")
    d.switch_to.default_content()
    out["host_status"] = host_status(d)
    time.sleep(0.3)
    out["console"] = console(d)


def reload(d, url, out):
    """The page loaded again: the View starts over and is told its call again."""
    d.get(url)
    wait_for(d, "the host page ready", lambda: host_status(d) == "ready")
    into_view(d)
    wait_for(d, "the first result", lambda: "tool-result" in (text(d, "#log") or ""))
    out["value_before"] = text(d, "#value")
    d.switch_to.default_content()
    d.refresh()
    wait_for(d, "the host page ready again", lambda: host_status(d) == "ready")
    into_view(d)
    wait_for(d, "the result again", lambda: "tool-result" in (text(d, "#log") or ""))
    out["value_after_reload"] = text(d, "#value")
    d.find_element(By.ID, "inc").click()
    wait_for(d, "increment's answer", lambda: (text(d, "#answer") or "").startswith("increment"))
    out["value_after_increment"] = text(d, "#value")
    d.switch_to.default_content()
    d.find_element(By.ID, "close").click()
    wait_for(d, "the View closed", lambda: host_status(d) == "closed")


def timing(d, url, out):
    t0 = time.monotonic()
    d.get(url)
    wait_for(d, "the host page ready", lambda: host_status(d) == "ready")
    out["ready_ms"] = round((time.monotonic() - t0) * 1000)
    d.find_element(By.ID, "close").click()
    wait_for(d, "the View closed", lambda: host_status(d) == "closed")


def forge(d, url, out):
    """A page on the sandbox's origin (not the host's) posts to the bridge."""
    d.get(url)
    wait_for(d, "the host page ready", lambda: host_status(d) == "ready")
    token = url.rstrip("/").split("/")[-1]
    host = url.split("/app/")[0]
    d.switch_to.frame(d.find_element(By.ID, "sandbox"))
    out["forged_status"] = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {method: 'POST', headers: {'content-type': 'application/json'},"
        " body: JSON.stringify({from: 'page', action: 'close'})})"
        ".then(r => done(r.status)).catch(e => done('failed: ' + e));",
        f"{host}/bridge/{token}",
    )
    # A frame posting to the host page that is not its sandbox frame: the page drops it.
    d.switch_to.default_content()
    d.execute_script(
        "const f = document.createElement('iframe'); f.id = 'intruder';"
        "f.srcdoc = '<script>parent.postMessage({jsonrpc:\"2.0\",id:99,method:\"tools/call\",params:{name:\"increment\",arguments:{n:1}}}, \"*\")<\\/script>';"
        "document.body.appendChild(f);"
    )
    time.sleep(0.5)
    out["host_status"] = host_status(d)
    d.find_element(By.ID, "close").click()
    wait_for(d, "the View closed", lambda: host_status(d) == "closed")


def main():
    scenario, url = sys.argv[1], sys.argv[2]
    out = {"scenario": scenario}
    d = browser()
    try:
        {"counter": counter, "sdk": sdk, "bad": bad, "timing": timing, "forge": forge, "reload": reload}[scenario](d, url, out)
    finally:
        d.quit()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
