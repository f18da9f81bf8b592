"""A headless Chromium driven through chromedriver's W3C WebDriver HTTP API, with the standard library only.

`browser()` skips the test when Debian's chromium or chromium-driver is not installed. The browser runs
with a fresh profile and without any of its own network traffic (no updates, sync or component fetches).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

CHROMIUM = os.environ.get("ATTNCALC_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("ATTNCALC_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1300,900",
]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
KEYS = {"ArrowRight": "\ue014", "ArrowLeft": "\ue012", "ArrowDown": "\ue015", "ArrowUp": "\ue013", "Enter": "\ue007"}


def available() -> bool:
    return all(os.access(p, os.X_OK) for p in (CHROMIUM, CHROMEDRIVER))


class Browser:
    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.profile = tempfile.mkdtemp(prefix="attncalc-chromium-")
        self.driver = subprocess.Popen(
            [CHROMEDRIVER, f"--port={self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 30  # a hang guard, not a speed requirement
        while True:
            try:
                if self._call("GET", "/status")["ready"]:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromedriver did not start")
            time.sleep(0.1)
        options = {"binary": CHROMIUM, "args": FLAGS + [f"--user-data-dir={self.profile}"]}
        caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": options}}}
        self.session = self._call("POST", "/session", caps)["sessionId"]

    def _call(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())["value"]

    def call(self, method: str, path: str, body=None):
        return self._call(method, f"/session/{self.session}{path}", body)

    def open(self, url: str) -> None:
        self.call("POST", "/url", {"url": url})

    def run(self, script: str, *args):
        """Run `script` (a function body: `return …`) in the page."""
        return self.call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css: str) -> str:
        return self.call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css: str) -> None:
        self.call("POST", f"/element/{self.find(css)}/click", {})

    def type(self, css: str, text: str) -> None:
        self.call("POST", f"/element/{self.find(css)}/value", {"text": text})

    def press(self, key: str) -> None:
        """A key press on the page (not on an element): the page's own key handler gets it."""
        k = KEYS.get(key, key)
        actions = [{"type": "keyDown", "value": k}, {"type": "keyUp", "value": k}]
        self.call("POST", "/actions", {"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})

    def cdp(self, command: str, params: dict):
        return self.call("POST", "/goog/cdp/execute", {"cmd": command, "params": params})

    def color_scheme(self, scheme: str) -> None:
        self.cdp("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})

    def screenshot(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("GET", "/screenshot")))

    def close(self) -> None:
        try:
            if getattr(self, "session", None):
                self._call("DELETE", f"/session/{self.session}")
        except OSError:
            pass
        finally:
            self.driver.terminate()
            try:
                self.driver.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.driver.kill()
            shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser():
    if not available():
        pytest.skip("Debian's chromium and chromium-driver are not installed")
    b = Browser()
    yield b
    b.close()


# The colours a reader sees: each element's text colour and the first opaque background behind it.
SEEN_COLOURS = """
const out = [];
const opaque = (c) => c && c !== "transparent" && !/rgba\\(.*,\\s*0\\)$/.test(c);
for (const e of document.querySelectorAll(arguments[0])) {
  if (!e.textContent.trim()) continue;
  let b = e, bg = null;
  while (b && b.nodeType === 1) { const c = getComputedStyle(b).backgroundColor; if (opaque(c)) { bg = c; break; } b = b.parentElement; }
  out.push([e.textContent.trim(), getComputedStyle(e).color, bg || "rgb(255, 255, 255)"]);
}
return out;
"""


def rgb(text: str) -> tuple[float, float, float]:
    parts = text[text.index("(") + 1 : text.index(")")].split(",")
    return tuple(float(p) for p in parts[:3])


def contrast(fg: str, bg: str) -> float:
    """WCAG 2's contrast ratio, from CSS colours as getComputedStyle gives them (rgb(…))."""

    def lum(c):
        def lin(v):
            s = v / 255
            return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

        r, g, b = map(lin, rgb(c))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    hi, lo = sorted((lum(fg), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)
