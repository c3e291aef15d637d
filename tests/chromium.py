"""A small Chrome DevTools Protocol client for the labelling page's browser tests: real headless
Chromium, driven over its websocket (websocket-client), no WebDriver. Not a test module."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--remote-debugging-port=0"]


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Chromium:
    """One headless Chromium with a fresh profile and one page; `requests` holds every URL the page asked for."""

    def __init__(self, timeout: float = 30.0) -> None:
        import websocket  # websocket-client

        binary = chromium_path()
        if binary is None:
            raise RuntimeError("no chromium on PATH")
        self.profile = Path(tempfile.mkdtemp(prefix="recall-kit-chromium-"))
        self.process = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not port_file.is_file() or not port_file.read_text().strip():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not start")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as response:
            targets = json.loads(response.read())
        page = next(t for t in targets if t.get("type") == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        self.requests: list[str] = []
        self.send("Page.enable")
        self.send("Network.enable")
        self.send("Runtime.enable")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        self.events.append(message)
        if message.get("method") == "Network.requestWillBeSent":
            self.requests.append(message["params"]["request"]["url"])

    def navigate(self, url: str, timeout: float = 30.0) -> None:
        self.send("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete' && !!document.getElementById('progress')", timeout)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """`expression`'s first truthy value, polled in the page every few milliseconds (one
        round trip per second at most: a Python-side poll of 50 ms cost a test grading 560 pairs
        half its time asleep); an exception it throws is raised here."""
        deadline = time.monotonic() + timeout
        poll = ("new Promise((resolve, reject) => { const end = performance.now() + 1000; const tick = () => { "
                f"let value; try {{ value = ({expression}); }} catch (error) {{ reject(error); return; }} "
                "if (value || performance.now() > end) resolve(value); else setTimeout(tick, 4); }; tick(); })")
        while True:
            try:
                value = self.evaluate(poll)
            except RuntimeError as error:  # a navigation ended the page the poll ran in: poll the new one
                if "context was destroyed" not in str(error):
                    raise
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(expression)

    def key(self, key: str) -> None:
        """Press and release one key, as a keyboard would (keydown with its text, then keyup)."""
        codes = {"Backspace": ("Backspace", 8, ""), "Escape": ("Escape", 27, ""), "Enter": ("Enter", 13, "\r"),
                 "ArrowDown": ("ArrowDown", 40, ""), "ArrowUp": ("ArrowUp", 38, "")}
        if key in codes:
            code, number, text = codes[key]
        else:
            code = f"Digit{key}" if key.isdigit() else f"Key{key.upper()}" if key.isalpha() else "Slash"
            number = ord(key.upper()) if key.isalnum() else 191
            text = key
        down = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": number}
        if text:
            down["text"] = text
        self.send("Input.dispatchKeyEvent", **down)
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=number)

    def drain(self, seconds: float = 0.3) -> None:
        """Read the events that arrive in the next `seconds` (the requests a last action made)."""
        self.socket.settimeout(seconds)
        try:
            while True:
                self._event(json.loads(self.socket.recv()))
        except Exception:  # the timeout: nothing more came
            pass
        finally:
            self.socket.settimeout(30)

    def close(self) -> None:
        try:
            if getattr(self, "socket", None) is not None:
                self.socket.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            shutil.rmtree(self.profile, ignore_errors=True)
