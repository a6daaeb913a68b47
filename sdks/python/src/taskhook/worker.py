"""The pull worker: claims tasks, runs a handler for each with heartbeats, reports outcomes."""

from __future__ import annotations

import asyncio
import inspect
import logging
import signal
import threading
import time
from types import FrameType
from typing import Any, Callable, Dict, List, Mapping, Optional, cast

from ._context import InputRequested, TaskFailure, WorkerContext, _invalid, _Run
from ._http import Transport, shutdown
from ._otel import run_context
from .client import _seg
from .errors import RateLimitError, TaskhookError
from .types import ClaimedTask

log = logging.getLogger("taskhook")

Handler = Callable[[ClaimedTask, "WorkerContext"], Any]


class Worker:
    """A pull worker for one agent. ``run()`` blocks; ``start()`` runs it in a background thread."""

    def __init__(
        self,
        agent_id: str,
        handler: Handler,
        *,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        concurrency: int = 1,
        lease_seconds: int = 60,
        wait_seconds: int = 20,
        worker_id: Optional[str] = None,
        grace_period: float = 10.0,
        handle_signals: bool = True,
        timeout: float = 60.0,
        max_retries: int = 2,
        headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self._http = Transport(base_url, api_key, timeout=timeout, max_retries=max_retries, headers=headers)
        self._base = f"/agent/{_seg(agent_id)}"
        self._handler = handler
        self._concurrency = concurrency
        self._lease_seconds = lease_seconds
        self._wait_seconds = wait_seconds
        self._worker_id = worker_id
        self._grace_period = grace_period
        self._handle_signals = handle_signals
        self._runs: Dict[str, _Run] = {}
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._skip_grace = threading.Event()
        self._stopped = threading.Event()
        self._claim_conn: Optional[Any] = None
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle -------------------------------------------------------------------------------

    def run(self) -> None:
        """Claims and runs tasks until stopped (stop(), or SIGINT/SIGTERM in the main thread)."""
        previous: Dict[int, Any] = {}
        if self._handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, self._on_signal)
        try:
            loop = threading.Thread(target=self._main, name="taskhook-worker", daemon=True)
            loop.start()
            # Short waits: the main thread stays responsive to signals.
            while not self._stopped.wait(0.2):
                pass
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def start(self) -> "Worker":
        """Runs the worker in a background thread (no signal handlers); returns self."""
        self._thread = threading.Thread(target=self._main, name="taskhook-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self, wait: bool = True) -> None:
        """Stops gracefully: no more claims, running handlers get the grace period, the rest is released."""
        self._begin_stop()
        if wait:
            self._stopped.wait()

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        if self._stopping.is_set():
            log.info("stopping now: releasing running tasks")
            self._skip_grace.set()
        else:
            log.info("stopping: finishing running tasks")
            self._begin_stop()

    def _begin_stop(self) -> None:
        self._stopping.set()
        conn = self._claim_conn
        if conn is not None:
            shutdown(conn)
        with self._cond:
            self._cond.notify_all()

    def _main(self) -> None:
        try:
            self._claim_loop()
            self._drain()
        except BaseException:  # noqa: BLE001 - the worker must settle whatever happens
            log.exception("worker stopped on an unexpected error")
        finally:
            self._stopped.set()

    # -- claims ----------------------------------------------------------------------------------

    def _claim_loop(self) -> None:
        while not self._stopping.is_set():
            with self._cond:
                while len(self._runs) >= self._concurrency and not self._stopping.is_set():
                    self._cond.wait()
                free = self._concurrency - len(self._runs)
            if self._stopping.is_set():
                return
            body: Dict[str, Any] = {
                "max_tasks": free,
                "wait_seconds": self._wait_seconds,
                "lease_seconds": self._lease_seconds,
            }
            if self._worker_id:
                body["worker_id"] = self._worker_id
            conn = self._http.connect(self._wait_seconds + 10)
            self._claim_conn = conn
            try:
                if self._stopping.is_set():
                    return
                answer = self._http.request("POST", f"{self._base}/tasks/claim", body, conn=conn)
            except TaskhookError as err:
                if self._stopping.is_set():
                    return
                delay = err.retry_after if isinstance(err, RateLimitError) and err.retry_after is not None else 1.0
                log.warning("claim failed (%s); trying again in %s s", err, delay)
                self._stopping.wait(delay)
                continue
            finally:
                self._claim_conn = None
                conn.close()
            tasks = cast(List[ClaimedTask], answer.get("tasks", []) if isinstance(answer, dict) else [])
            for task in tasks:
                if self._stopping.is_set():
                    self._release(task)
                else:
                    self._start_run(task)

    def _start_run(self, task: ClaimedTask) -> None:
        run = _Run(task, WorkerContext(self, task))
        with self._cond:
            self._runs[task["task_id"]] = run
        threading.Thread(target=self._execute, args=(run,), name=f"taskhook-task-{task['task_id']}", daemon=True).start()
        threading.Thread(target=self._heartbeats, args=(run,), name="taskhook-heartbeat", daemon=True).start()

    # -- one task --------------------------------------------------------------------------------

    def _heartbeats(self, run: _Run) -> None:
        interval = max(1.0, self._lease_seconds / 3)
        try:
            while not run.ended.wait(interval):
                if run.ctx.cancelled:
                    return
                run.ctx._heartbeat()
        finally:
            self._http.close()

    def _call_handler(self, run: _Run) -> Any:
        with run_context(run.ctx.traceparent):
            result = self._handler(run.task, run.ctx)
            if inspect.isawaitable(result):
                awaitable = result

                async def main() -> Any:
                    return await awaitable

                result = asyncio.run(main())
            return result

    def _execute(self, run: _Run) -> None:
        task, ctx = run.task, run.ctx
        try:
            try:
                result = self._call_handler(run)
            except InputRequested:
                return
            except BaseException as err:  # noqa: BLE001 - a handler's error never stops the worker
                if ctx.cancelled or ctx._reported:
                    return
                if isinstance(err, TaskFailure):
                    error: Dict[str, Any] = {"message": err.message or "TaskFailure"}
                    if err.code:
                        error["code"] = err.code
                    body: Dict[str, Any] = {"error": error, "retryable": err.retryable}
                    if err.retryable and err.retry_after_seconds is not None:
                        body["retry_after_seconds"] = err.retry_after_seconds
                    self._report(task, "fail", body)
                else:
                    message = str(err) or type(err).__name__
                    self._report(task, "fail", {"error": {"message": message}, "retryable": False})
                return
            if ctx.cancelled or ctx._reported:
                return
            if not isinstance(result, dict):
                why = f"The handler returned {type(result).__name__}, not a JSON object"
                self._report(task, "fail", _invalid(why))
                return
            self._report(task, "complete", {"result": result})
        finally:
            self._http.close()
            run.ended.set()
            with self._cond:
                self._runs.pop(task["task_id"], None)
                self._cond.notify_all()

    def _report(self, task: ClaimedTask, kind: str, body: Dict[str, Any]) -> None:
        """Sends a report (retried); TASK_NOT_RUNNING is logged, other failures are logged too.
        A result the server refuses, or one that is not JSON, is reported as the task's failure."""
        path = f"{self._base}/task/{_seg(task['task_id'])}/{kind}"
        try:
            self._http.request("POST", path, {"lease_id": task["lease_id"], **body}, retry=True)
        except (TypeError, ValueError) as err:
            if kind != "complete":
                raise
            self._report(task, "fail", _invalid(f"The result is not JSON: {err}"))
        except TaskhookError as err:
            if kind == "complete" and err.code == "INVALID_REQUEST":
                self._report(task, "fail", _invalid(err.message))
            elif err.code == "TASK_NOT_RUNNING":
                log.info("%s of task %s refused: it is no longer running", kind, task["task_id"])
            else:
                log.warning("could not send %s of task %s: %s", kind, task["task_id"], err)

    def _release(self, task: ClaimedTask) -> None:
        self._report(task, "release", {})

    # -- graceful stop ---------------------------------------------------------------------------

    def _drain(self) -> None:
        deadline = time.monotonic() + self._grace_period
        with self._cond:
            while self._runs and not self._skip_grace.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.2))
            leftover = list(self._runs.values())
        for run in leftover:
            if run.ended.is_set():
                continue
            run.ctx._abort("shutdown")
            run.ended.set()
            self._release(run.task)


def run_worker(
    agent_id: str,
    handler: Handler,
    *,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
    concurrency: int = 1,
    lease_seconds: int = 60,
    wait_seconds: int = 20,
    worker_id: Optional[str] = None,
    grace_period: float = 10.0,
    handle_signals: bool = True,
    timeout: float = 60.0,
    max_retries: int = 2,
    headers: Optional[Mapping[str, str]] = None,
) -> None:
    """Runs a worker until it is stopped (SIGINT/SIGTERM): ``Worker(...).run()``."""
    Worker(
        agent_id,
        handler,
        base_url=base_url,
        api_key=api_key,
        concurrency=concurrency,
        lease_seconds=lease_seconds,
        wait_seconds=wait_seconds,
        worker_id=worker_id,
        grace_period=grace_period,
        handle_signals=handle_signals,
        timeout=timeout,
        max_retries=max_retries,
        headers=headers,
    ).run()


__all__ = ["InputRequested", "TaskFailure", "Worker", "WorkerContext", "run_worker"]
