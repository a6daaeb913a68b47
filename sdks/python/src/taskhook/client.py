"""TaskhookClient: tasks, task events and triggers."""

from __future__ import annotations

import http.client
import json
import time
import uuid
from datetime import datetime
from types import TracebackType
from typing import Any, Dict, Generator, Iterable, List, Mapping, NamedTuple, Optional, Type, Union, cast
from urllib.parse import quote, urlencode

from ._http import Transport
from .errors import TaskhookConnectionError, TaskhookError, error_of
from .types import CancelResult, MessageResult, SubmitResult, Task, TaskList, Trigger, TriggerList


class _Unset:
    """The type of ``UNSET``: a field left out of a change, as opposed to one set to None."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()

FINAL_STATES = frozenset({"completed", "failed", "cancelled"})
_MAX_EMPTY_RECONNECTS = 5


class TaskEvent(NamedTuple):
    """One item of a task's event stream: its id and the task as the GET answers it."""

    id: int
    task: Task


def _seg(value: str) -> str:
    return quote(value, safe="")


def _query(**params: Any) -> str:
    given = {k: v for k, v in params.items() if v is not None}
    return f"?{urlencode(given)}" if given else ""


class TaskhookClient:
    """A client of the task and trigger API. Thread-safe; also a context manager."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        self._http = Transport(base_url, api_key, timeout=timeout, max_retries=max_retries, headers=headers)

    @property
    def base_url(self) -> str:
        """The API's base URL, without a trailing slash."""
        return self._http.base_url

    def submit(
        self,
        agent_id: str,
        message: str,
        *,
        priority: Optional[int] = None,
        timeout_override: Optional[int] = None,
        metadata: Optional[Dict[str, Any]] = None,
        callback_mode: Optional[str] = None,
        webhook_url: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        traceparent: Optional[str] = None,
        concurrency_key: Optional[str] = None,
        run_at: Union[str, datetime, None] = None,
        delay_seconds: Optional[int] = None,
    ) -> SubmitResult:
        """Queues a task. Always sends an Idempotency-Key, so a retried submit never makes a second task.

        ``run_at`` (an RFC 3339 string or a timezone-aware ``datetime``) or ``delay_seconds`` delays
        its start: it is not handed out before then."""
        body: Dict[str, Any] = {"message": message}
        if isinstance(run_at, datetime):
            if run_at.tzinfo is None or run_at.utcoffset() is None:
                raise ValueError("run_at must be a timezone-aware datetime")
            run_at = run_at.isoformat()
        for name, value in (
            ("run_at", run_at),
            ("delay_seconds", delay_seconds),
            ("priority", priority),
            ("timeout_override", timeout_override),
            ("metadata", metadata),
            ("callback_mode", callback_mode),
            ("webhook_url", webhook_url),
            ("concurrency_key", concurrency_key),
        ):
            if value is not None:
                body[name] = value
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        if traceparent:
            headers["traceparent"] = traceparent
        path = f"/agent/request/{_seg(agent_id)}"
        return cast(SubmitResult, self._http.request("POST", path, body, headers=headers, retry=True))

    def get(self, agent_id: str, task_id: str) -> Task:
        path = f"/agent/{_seg(agent_id)}/task/{_seg(task_id)}"
        return cast(Task, self._http.request("GET", path, retry=True))

    def list(
        self, agent_id: str, *, status: Optional[str] = None, page: Optional[int] = None, limit: Optional[int] = None
    ) -> TaskList:
        path = f"/agent/{_seg(agent_id)}/tasks{_query(status=status, page=page, limit=limit)}"
        return cast(TaskList, self._http.request("GET", path, retry=True))

    def message(self, agent_id: str, task_id: str, message: str) -> MessageResult:
        """Sends a follow-up message (answers an input request). Sent once."""
        path = f"/agent/{_seg(agent_id)}/task/{_seg(task_id)}/message"
        return cast(MessageResult, self._http.request("POST", path, {"message": message}))

    def cancel(self, agent_id: str, task_id: str) -> CancelResult:
        path = f"/agent/{_seg(agent_id)}/task/{_seg(task_id)}/cancel"
        return cast(CancelResult, self._http.request("POST", path, retry=True))

    def wait_for(
        self,
        agent_id: str,
        task_id: str,
        *,
        until: Optional[Iterable[str]] = None,
        interval: float = 0.5,
        timeout: float = 600.0,
    ) -> Task:
        """Polls until the task's status is in ``until`` (default: a final state); TimeoutError after ``timeout``."""
        wanted = frozenset(until) if until is not None else FINAL_STATES
        deadline = time.monotonic() + timeout
        while True:
            task = self.get(agent_id, task_id)
            if task["status"] in wanted:
                return task
            if time.monotonic() >= deadline:
                raise TimeoutError(f"Task {task_id} is still {task['status']} after {timeout} s")
            time.sleep(interval)

    def events(
        self, agent_id: str, task_id: str, *, last_event_id: Union[int, str, None] = None
    ) -> Generator[TaskEvent, None, None]:
        """The task's events, in order, ending after a final state; broken connections are resumed."""
        path = f"{self._http.prefix}/agent/{_seg(agent_id)}/task/{_seg(task_id)}/events"
        last = None if last_event_id is None else str(last_event_id)
        first = True
        empty_in_a_row = 0
        while True:
            delivered = False
            last_error: Optional[BaseException] = None
            conn = self._http.connect(None)
            try:
                headers = {**self._http.headers, "Accept": "text/event-stream"}
                if last is not None:
                    headers["Last-Event-ID"] = last
                try:
                    conn.request("GET", path, headers=headers)
                    res = conn.getresponse()
                except (OSError, http.client.HTTPException) as err:
                    raise TaskhookConnectionError(f"No answer from {self._http.base_url}: {err}") from err
                if res.status != 200:
                    text = res.read().decode("utf-8", errors="replace")
                    try:
                        body: Any = json.loads(text)
                    except ValueError:
                        body = text
                    raise error_of(res.status, body, {k.lower(): v for k, v in res.getheaders()})
                first = False
                for event_id, data in _read_events(res):
                    item = TaskEvent(int(event_id) if event_id else 0, cast(Task, json.loads(data)))
                    if event_id:
                        last = event_id
                    delivered = True
                    empty_in_a_row = 0
                    yield item
                    if item.task["status"] in FINAL_STATES:
                        return
            except TaskhookError as err:
                # A redirect is never followed (http.client follows none) nor resumed: the key in
                # Authorization must not go to a Location chosen by whoever answered.
                if first or (err.status is not None and 300 <= err.status < 400):
                    raise
                last_error = err
            except (OSError, http.client.HTTPException) as err:
                last_error = TaskhookConnectionError(f"The event stream broke: {err}")
            finally:
                conn.close()
            if not delivered:
                if last_error is None and self.get(agent_id, task_id)["status"] in FINAL_STATES:
                    return
                empty_in_a_row += 1
                if empty_in_a_row >= _MAX_EMPTY_RECONNECTS:
                    raise last_error or TaskhookConnectionError("The event stream keeps ending without events")
            time.sleep(min(0.25 * empty_in_a_row, 2.0))

    def create_trigger(
        self,
        agent_id: str,
        name: str,
        message_template: str,
        *,
        enabled: Optional[bool] = None,
        concurrency_key: Optional[str] = None,
        verification: Optional[Mapping[str, Any]] = None,
    ) -> Trigger:
        """Creates a trigger. ``verification`` picks a signature scheme, e.g.
        ``{"type": "stripe", "secret": "whsec_..."}``; ``concurrency_key`` is a template."""
        body: Dict[str, Any] = {"name": name, "message_template": message_template}
        for key, value in (("enabled", enabled), ("concurrency_key", concurrency_key), ("verification", verification)):
            if value is not None:
                body[key] = dict(value) if isinstance(value, Mapping) else value
        return cast(Trigger, self._http.request("POST", f"/v1/agent/{_seg(agent_id)}/triggers", body))

    def list_triggers(self, agent_id: str, *, page: Optional[int] = None, limit: Optional[int] = None) -> TriggerList:
        path = f"/v1/agent/{_seg(agent_id)}/triggers{_query(page=page, limit=limit)}"
        return cast(TriggerList, self._http.request("GET", path, retry=True))

    def get_trigger(self, agent_id: str, trigger_id: str) -> Trigger:
        path = f"/v1/agent/{_seg(agent_id)}/triggers/{_seg(trigger_id)}"
        return cast(Trigger, self._http.request("GET", path, retry=True))

    def update_trigger(
        self,
        agent_id: str,
        trigger_id: str,
        *,
        name: Optional[str] = None,
        message_template: Optional[str] = None,
        enabled: Optional[bool] = None,
        concurrency_key: Union[str, None, _Unset] = UNSET,
        verification: Optional[Mapping[str, Any]] = None,
    ) -> Trigger:
        """Changes the fields given. ``concurrency_key=None`` removes the key template (left out: kept);
        ``verification`` keeps its ``type`` and may carry a new secret or tolerance."""
        fields = (("name", name), ("message_template", message_template), ("enabled", enabled))
        body: Dict[str, Any] = {k: v for k, v in fields if v is not None}
        if not isinstance(concurrency_key, _Unset):
            body["concurrency_key"] = concurrency_key
        if verification is not None:
            body["verification"] = dict(verification)
        path = f"/v1/agent/{_seg(agent_id)}/triggers/{_seg(trigger_id)}"
        return cast(Trigger, self._http.request("PATCH", path, body))

    def delete_trigger(self, agent_id: str, trigger_id: str) -> None:
        path = f"/v1/agent/{_seg(agent_id)}/triggers/{_seg(trigger_id)}"
        self._http.request("DELETE", path, retry=True)

    def rotate_trigger_secret(self, agent_id: str, trigger_id: str) -> Trigger:
        path = f"/v1/agent/{_seg(agent_id)}/triggers/{_seg(trigger_id)}/rotate_secret"
        return cast(Trigger, self._http.request("POST", path))

    def close(self) -> None:
        """Closes the calling thread's kept-alive connection."""
        self._http.close()

    def __enter__(self) -> "TaskhookClient":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()


def _read_events(res: http.client.HTTPResponse) -> Generator[tuple[str, str], None, None]:
    """The ``task`` events of a text/event-stream answer, as (id, data)."""
    event_id = ""
    event = "message"
    data: List[str] = []
    while True:
        raw = res.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data and event == "task":
                yield event_id, "\n".join(data)
            event = "message"
            data = []
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "id":
                event_id = value
            elif field == "event":
                event = value
            elif field == "data":
                data.append(value)
