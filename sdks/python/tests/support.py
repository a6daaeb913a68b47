"""Shared helpers: the server under test comes from TASKHOOK_URL / TASKHOOK_API_KEY."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import unittest
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

SRC = str(Path(__file__).resolve().parent.parent / "src")
if SRC not in sys.path:
    sys.path.insert(0, SRC)

URL = os.environ.get("TASKHOOK_URL", "")
KEY = os.environ.get("TASKHOOK_API_KEY", "")


def needs_server(case: type) -> type:
    """Skips a test class when no server was given (the vitest file always gives one)."""
    return unittest.skipUnless(URL and KEY, "set TASKHOOK_URL and TASKHOOK_API_KEY")(case)


def create_agent(concurrency: int = 4) -> str:
    """A new agent of the key's workspace (plain HTTP: agents are not the SDK's business)."""
    body = json.dumps({"name": "python sdk test", "concurrency": concurrency}).encode()
    request = urllib.request.Request(
        f"{URL}/agent",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as res:
        return str(json.loads(res.read())["uuid"])


def eventually(read: Callable[[], Any], ok: Callable[[Any], bool], what: str, seconds: float = 15.0) -> Any:
    """Calls ``read`` until ``ok`` holds for its value; fails after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if ok(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}: {value!r}")
        time.sleep(0.05)


Answer = Tuple[int, Dict[str, str], bytes]


class FakeServer:
    """A local HTTP server that answers from a script and records requests (for transport rules)."""

    def __init__(self, answers: List[Answer]) -> None:
        self.answers = list(answers)
        self.requests: List[Dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                owner.requests.append(
                    {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
                )
                status, headers, payload = owner.answers.pop(0) if owner.answers else (200, {}, b"{}")
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = do_PATCH = _any

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def json_answer(status: int, body: Any, headers: Optional[Dict[str, str]] = None) -> Answer:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode()
