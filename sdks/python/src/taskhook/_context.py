"""What a handler works with besides its task: its context, and the exceptions that end a run."""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, NoReturn, Optional, Protocol

from ._http import Transport
from .client import _seg
from .errors import TaskhookError
from .types import ClaimedTask

log = logging.getLogger("taskhook")


class InputRequested(Exception):
    """Raised by ``ctx.ask_for_input``: ends this run of the handler. Let it through."""

    def __init__(self, question: str) -> None:
        super().__init__("The task is waiting for input")
        self.question = question


class TaskFailure(Exception):
    """Raise it from a handler to fail the task with a code, optionally queueing it again."""

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        retryable: bool = False,
        retry_after_seconds: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.retryable = retryable
        #: With ``retryable``: wait at least this long before the retry (the agent's backoff when longer).
        self.retry_after_seconds = retry_after_seconds


class _WorkerLink(Protocol):
    """What a context needs of its worker (the ``Worker`` has it): where the agent's tasks are,
    the connection, and how a run's outcome is reported."""

    _base: str
    _http: Transport

    def _report(self, task: ClaimedTask, kind: str, body: Dict[str, Any]) -> None: ...


class WorkerContext:
    """What a handler gets besides its task: progress, input requests, cancellation."""

    def __init__(self, worker: _WorkerLink, task: ClaimedTask) -> None:
        self._worker = worker
        self._task = task
        self._lock = threading.Lock()
        self._progress: Dict[str, Any] = {"current_step": "", "steps_completed": 0, "total_steps": 0}
        self._reported = False
        self.traceparent: str = task["traceparent"]
        self.cancel_event = threading.Event()
        self.abort_reason: Optional[str] = None

    @property
    def cancelled(self) -> bool:
        """True once the task was aborted (cancelled, lease lost, or released at shutdown)."""
        return self.cancel_event.is_set()

    def progress(self, current_step: str, steps_completed: int, total_steps: int, *, flush: bool = False) -> None:
        """Stores progress; it goes out with the next heartbeat, or at once with ``flush``."""
        with self._lock:
            self._progress = {
                "current_step": current_step,
                "steps_completed": steps_completed,
                "total_steps": total_steps,
            }
        if flush:
            self._heartbeat()

    def ask_for_input(self, question: str) -> NoReturn:
        """Puts the task in awaiting_input with this question and ends this run of the handler."""
        self._reported = True
        if not self.cancelled:
            self._worker._report(self._task, "input_request", {"message": question})
        raise InputRequested(question)

    def _abort(self, reason: str) -> None:
        if not self.cancel_event.is_set():
            self.abort_reason = reason
            self.cancel_event.set()

    def _heartbeat(self) -> None:
        if self.cancelled:
            return
        with self._lock:
            body = {"lease_id": self._task["lease_id"], **self._progress}
        path = f"{self._worker._base}/task/{_seg(self._task['task_id'])}/progress"
        try:
            answer = self._worker._http.request("POST", path, body, retry=True)
            if isinstance(answer, dict) and answer.get("status") == "cancelled":
                self._abort("cancelled")
        except TaskhookError as err:
            if err.status == 400:
                self._abort("lease_lost")
            else:
                log.warning("heartbeat of task %s failed: %s", self._task["task_id"], err)


class _Run:
    def __init__(self, task: ClaimedTask, ctx: WorkerContext) -> None:
        self.task = task
        self.ctx = ctx
        self.ended = threading.Event()


def _invalid(message: str) -> Dict[str, Any]:
    return {"error": {"code": "INVALID_RESULT", "message": message}, "retryable": False}
