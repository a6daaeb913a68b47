"""Errors of the taskhook API: one class per HTTP status family (see the README)."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type


class TaskhookError(Exception):
    """An error answer of the API (or, for TaskhookConnectionError, no answer at all)."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        details: Any = None,
        request_id: Optional[str] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details = details
        self.request_id = request_id
        self.body = body
        # The answer's Retry-After seconds whatever the status (a 503 may carry one): the retry wait.
        self._retry_after: Optional[float] = None

    def __str__(self) -> str:
        parts = [self.message]
        if self.status is not None:
            parts.append(f"(HTTP {self.status}{', ' + self.code if self.code else ''})")
        return " ".join(parts)


class BadRequestError(TaskhookError):
    """400."""


class AuthenticationError(TaskhookError):
    """401."""


class PermissionDeniedError(TaskhookError):
    """403."""


class NotFoundError(TaskhookError):
    """404."""


class ConflictError(TaskhookError):
    """409."""


class RateLimitError(TaskhookError):
    """429; ``retry_after`` holds the Retry-After seconds when the answer had them."""

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.retry_after = retry_after


class ServerError(TaskhookError):
    """500 and above."""


class TaskhookConnectionError(TaskhookError):
    """No answer: refused, reset, timed out, unknown host."""


_BY_STATUS: Dict[int, Type[TaskhookError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
}


def retry_after_of(value: Optional[str]) -> Optional[float]:
    """Reads a Retry-After header as seconds (None when absent or not a number)."""
    if value is None or value.strip() == "":
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def error_of(status: int, body: Any, headers: Mapping[str, str]) -> TaskhookError:
    """The error of an answer: the envelope, a flat ``{"error": "..."}`` or a non-JSON body."""
    envelope = body if isinstance(body, dict) else None
    err = envelope.get("error") if envelope is not None else None
    structured = err if isinstance(err, dict) else None
    code = structured.get("code") if structured is not None else None
    if isinstance(err, str):
        message = err
    elif structured is not None and isinstance(structured.get("message"), str):
        message = structured["message"]
    else:
        message = f"The server answered HTTP {status}"
    request_id = headers.get("x-request-id")
    if request_id is None and envelope is not None and isinstance(envelope.get("meta"), dict):
        rid = envelope["meta"].get("request_id")
        request_id = rid if isinstance(rid, str) else None
    fields: Dict[str, Any] = {
        "status": status,
        "code": code if isinstance(code, str) else None,
        "details": structured.get("details") if structured is not None else None,
        "request_id": request_id,
        "body": body,
    }
    retry_after = retry_after_of(headers.get("retry-after"))
    error: TaskhookError
    if status == 429:
        error = RateLimitError(message, retry_after=retry_after, **fields)
    elif status >= 500:
        error = ServerError(message, **fields)
    else:
        error = _BY_STATUS.get(status, TaskhookError)(message, **fields)
    error._retry_after = retry_after
    return error
