"""The HTTP transport: keep-alive connections per thread, JSON, errors and retries."""

from __future__ import annotations

import http.client
import json
import os
import platform
import random
import socket
import threading
import time
from typing import Any, Dict, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from ._version import __version__
from .errors import TaskhookConnectionError, TaskhookError, error_of

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})


def retry_delay(attempt: int, retry_after: Optional[float]) -> float:
    """Seconds before retry ``attempt`` (1, 2, ...): Retry-After (at most 60), else backoff with jitter (at most 8)."""
    if retry_after is not None:
        return min(retry_after, 60.0)
    base = 0.5 * 2 ** (attempt - 1)
    return float(min(base * (1 + random.random() * 0.25), 8.0))


def is_retriable(err: BaseException) -> bool:
    """Whether a failed attempt may be repeated (no answer, or 408/429/5xx gateway statuses)."""
    if isinstance(err, TaskhookConnectionError):
        return True
    return isinstance(err, TaskhookError) and err.status in RETRIED_STATUSES


class Transport:
    """Sends requests to one base URL; thread-safe (each thread keeps its own connection)."""

    def __init__(
        self,
        base_url: Optional[str],
        api_key: Optional[str],
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        url = base_url if base_url is not None else os.environ.get("TASKHOOK_URL") or "http://localhost:8080"
        key = api_key if api_key is not None else os.environ.get("TASKHOOK_API_KEY")
        if not key:
            raise ValueError("No API key: pass api_key or set TASKHOOK_API_KEY")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, got {url!r}")
        self.base_url = url.rstrip("/")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries
        self.headers: Dict[str, str] = {
            "User-Agent": f"taskhook-python/{__version__} python/{platform.python_version()}",
            "Authorization": f"Bearer {key}",
            **dict(headers or {}),
        }
        self._local = threading.local()

    def connect(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        """A new connection (for streams and claims, which must be closable on their own)."""
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _pooled(self) -> http.client.HTTPConnection:
        conn: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.connect(self.timeout)
            self._local.conn = conn
        return conn

    def _drop_pooled(self) -> None:
        conn: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
        self._local.conn = None

    def close(self) -> None:
        """Closes this thread's kept-alive connection."""
        self._drop_pooled()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        headers: Optional[Mapping[str, str]] = None,
        retry: bool = False,
        conn: Optional[http.client.HTTPConnection] = None,
    ) -> Any:
        """Sends a JSON request and returns the parsed body; a non-2xx answer raises its TaskhookError."""
        attempts = self.max_retries + 1 if retry else 1
        n = 0
        while True:
            n += 1
            try:
                return self._attempt(method, path, body, headers, conn)
            except TaskhookError as err:
                if n >= attempts or not is_retriable(err):
                    raise
                time.sleep(retry_delay(n, err._retry_after))

    def _attempt(
        self,
        method: str,
        path: str,
        body: Any,
        headers: Optional[Mapping[str, str]],
        own: Optional[http.client.HTTPConnection],
    ) -> Any:
        all_headers = {**self.headers, "Accept": "application/json", **dict(headers or {})}
        data: Optional[bytes] = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        status, answer_headers, text = self._exchange(method, self.prefix + path, data, all_headers, own)
        ok = 200 <= status < 300
        parsed: Any = None
        if text:
            try:
                parsed = json.loads(text)
            except ValueError:
                if ok:
                    raise TaskhookError(f"The server answered HTTP {status} with a body that is not JSON", status=status)
                parsed = text
        if not ok:
            raise error_of(status, parsed, answer_headers)
        return parsed

    def _exchange(
        self,
        method: str,
        path: str,
        data: Optional[bytes],
        headers: Dict[str, str],
        own: Optional[http.client.HTTPConnection],
    ) -> Tuple[int, Dict[str, str], str]:
        # A kept-alive connection the server closed meanwhile fails at once: try once more on a fresh one.
        for fresh in (False, True):
            conn = own if own is not None else self._pooled()
            try:
                conn.request(method, path, body=data, headers=headers)
                res = conn.getresponse()
                raw = res.read()
                answer = {k.lower(): v for k, v in res.getheaders()}
                if own is None and res.will_close:
                    self._drop_pooled()
                return res.status, answer, raw.decode("utf-8", errors="replace")
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as err:
                if own is None:
                    self._drop_pooled()
                if fresh or own is not None or not _was_reused(err):
                    raise TaskhookConnectionError(f"No answer from {self.base_url}: {err}") from err
            except (OSError, http.client.HTTPException) as err:
                if own is None:
                    self._drop_pooled()
                raise TaskhookConnectionError(f"No answer from {self.base_url}: {err}") from err
        raise TaskhookConnectionError(f"No answer from {self.base_url}")


def _was_reused(err: BaseException) -> bool:
    # Retrying on a fresh connection is only sound for a failure at the very start of the exchange,
    # which is what a server-closed idle connection gives; treat those errors as such.
    return isinstance(err, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError))


def shutdown(conn: http.client.HTTPConnection) -> None:
    """Closes a connection that another thread may be blocked on (its read returns at once)."""
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    conn.close()
