from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import unittest
from typing import Any, Dict, List

from tests import support
from tests.support import KEY, SRC, URL, eventually, needs_server

from taskhook import ClaimedTask, InputRequested, TaskFailure, TaskhookClient, Worker, WorkerContext


def _ms(stamp: str) -> int:
    """Milliseconds since the epoch of an API timestamp (ISO 8601, UTC, with milliseconds)."""
    from datetime import datetime

    return round(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


@needs_server
class WorkerTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = TaskhookClient(URL, KEY)
        self.addCleanup(self.client.close)
        self.agent = support.create_agent(concurrency=4)

    def worker(self, handler: Any, **options: Any) -> Worker:
        options.setdefault("wait_seconds", 1)
        options.setdefault("grace_period", 5.0)
        worker = Worker(self.agent, handler, base_url=URL, api_key=KEY, **options).start()
        self.addCleanup(worker.stop)
        return worker

    def final(self, task_id: str) -> Dict[str, Any]:
        return dict(self.client.wait_for(self.agent, task_id, timeout=20))

    def test_drains_tasks_with_progress_sync_and_async(self) -> None:
        def handler(task: ClaimedTask, ctx: WorkerContext) -> Dict[str, Any]:
            ctx.progress("thinking", 1, 2, flush=True)
            if task["message"] == "async":
                async def inner() -> Dict[str, Any]:
                    await asyncio.sleep(0.01)
                    return {"summary": "async done"}

                return asyncio.run(inner())
            return {"summary": f"done: {task['message']}"}

        async def async_handler(task: ClaimedTask, ctx: WorkerContext) -> Dict[str, Any]:
            await asyncio.sleep(0.01)
            return {"summary": "from a coroutine", "findings": []}

        self.worker(handler, concurrency=3)
        ids = [self.client.submit(self.agent, f"task {i}")["task_id"] for i in range(5)]
        for task_id in ids:
            task = self.final(task_id)
            self.assertEqual(task["status"], "completed")
            self.assertTrue(task["result"]["summary"].startswith("done: task"))
        other = support.create_agent()
        worker = Worker(other, async_handler, base_url=URL, api_key=KEY, wait_seconds=1).start()
        self.addCleanup(worker.stop)
        task_id = self.client.submit(other, "x")["task_id"]
        self.assertEqual(self.client.wait_for(other, task_id, timeout=20)["result"]["summary"], "from a coroutine")

    def test_asks_for_input_and_resumes_with_the_reply(self) -> None:
        def handler(task: ClaimedTask, ctx: WorkerContext) -> Dict[str, Any]:
            replies = [m["content"] for m in task["messages"] if m["role"] == "user"]
            if len(replies) < 2:
                ctx.ask_for_input("which file?")
            return {"summary": f"reviewed {replies[-1]}"}

        self.worker(handler)
        task_id = self.client.submit(self.agent, "review")["task_id"]
        waiting = self.client.wait_for(self.agent, task_id, until=["awaiting_input"], timeout=20)
        self.assertEqual(waiting["input_request"]["message"], "which file?")
        self.client.message(self.agent, task_id, "main.py")
        self.assertEqual(self.final(task_id)["result"]["summary"], "reviewed main.py")

    def test_failures(self) -> None:
        attempts: List[int] = []

        def handler(task: ClaimedTask, ctx: WorkerContext) -> Any:
            if task["message"] == "retry":
                attempts.append(task["attempt"])
                if task["attempt"] == 1:
                    raise TaskFailure("flaky", code="X_FLAKY", retryable=True)
                return {"summary": "second time lucky"}
            if task["message"] == "fail":
                raise TaskFailure("not a repo", code="NOT_A_REPO")
            if task["message"] == "crash":
                raise RuntimeError("boom")
            if task["message"] == "none":
                return None
            return {"summary": 5}

        self.worker(handler)
        retry = self.client.submit(self.agent, "retry")["task_id"]
        self.assertEqual(self.final(retry)["result"]["summary"], "second time lucky")
        self.assertEqual(attempts, [1, 2])
        expected = {"fail": "NOT_A_REPO", "crash": "AGENT_ERROR", "none": "INVALID_RESULT", "bad": "INVALID_RESULT"}
        ids = {m: self.client.submit(self.agent, m)["task_id"] for m in expected}
        for message, code in expected.items():
            task = self.final(ids[message])
            self.assertEqual((task["status"], task["error"]["code"]), ("failed", code), message)
        self.assertEqual(self.final(ids["crash"])["error"]["message"], "boom")

    def test_retry_after_seconds_asks_for_that_wait(self) -> None:
        def handler(task: ClaimedTask, ctx: WorkerContext) -> Any:
            raise TaskFailure("rate limited", retryable=True, retry_after_seconds=120)

        self.worker(handler)
        task_id = self.client.submit(self.agent, "later")["task_id"]
        task = eventually(
            lambda: self.client.get(self.agent, task_id),
            lambda t: t.get("last_error") is not None,
            "the retryable failure",
        )
        self.assertEqual((task["status"], task["attempt"]), ("queued", 2))
        waited = _ms(task["available_at"]) - _ms(task["last_error"]["at"])
        self.assertEqual(waited, 120_000)

    def test_cancel_reaches_the_handler_and_nothing_is_reported(self) -> None:
        seen: List[Any] = []

        def handler(task: ClaimedTask, ctx: WorkerContext) -> Dict[str, Any]:
            ctx.cancel_event.wait(20)
            seen.append(ctx.abort_reason)
            return {"summary": "too late"}

        self.worker(handler, lease_seconds=3)
        task_id = self.client.submit(self.agent, "long")["task_id"]
        self.client.wait_for(self.agent, task_id, until=["running"], timeout=20)
        cancelled_at = self.client.cancel(self.agent, task_id)["cancelled_at"]
        eventually(lambda: seen, lambda s: s == ["cancelled"], "the handler to see the cancel")
        time.sleep(0.3)
        task = self.client.get(self.agent, task_id)
        self.assertEqual((task["status"], task.get("cancelled_at")), ("cancelled", cancelled_at))

    def test_heartbeats_keep_a_long_task_on_its_first_attempt(self) -> None:
        def handler(task: ClaimedTask, ctx: WorkerContext) -> Dict[str, Any]:
            time.sleep(3.5)
            return {"summary": f"attempt {task['attempt']}"}

        self.worker(handler, lease_seconds=2)
        task_id = self.client.submit(self.agent, "slow")["task_id"]
        self.assertEqual(self.final(task_id)["result"]["summary"], "attempt 1")

    def test_stop_releases_what_outlives_the_grace_period(self) -> None:
        reasons: List[Any] = []
        started = threading.Event()

        def handler(task: ClaimedTask, ctx: WorkerContext) -> Dict[str, Any]:
            started.set()
            ctx.cancel_event.wait(20)
            reasons.append(ctx.abort_reason)
            return {"summary": "dropped"}

        worker = self.worker(handler, grace_period=0.3)
        task_id = self.client.submit(self.agent, "hold")["task_id"]
        self.assertTrue(started.wait(20))
        worker.stop()
        task = self.client.get(self.agent, task_id)
        self.assertEqual((task["status"]), "queued")
        claimed = eventually(lambda: reasons, lambda r: r == ["shutdown"], "the abort")
        self.assertEqual(claimed, ["shutdown"])

    def test_a_real_sigterm_stops_a_script_cleanly(self) -> None:
        script = (
            "import sys, time, taskhook\n"
            "def handler(task, ctx):\n"
            "    print('started', flush=True)\n"
            "    time.sleep(1)\n"
            "    return {'summary': 'finished in the grace period'}\n"
            f"taskhook.run_worker({self.agent!r}, handler, wait_seconds=20)\n"
            "print('stopped', flush=True)\n"
        )
        env = {**os.environ, "PYTHONPATH": SRC, "TASKHOOK_URL": URL, "TASKHOOK_API_KEY": KEY}
        child = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        task_id = self.client.submit(self.agent, "run")["task_id"]
        assert child.stdout is not None
        self.assertEqual(child.stdout.readline().strip(), "started")
        child.send_signal(signal.SIGTERM)
        self.assertEqual(child.wait(timeout=20), 0)
        self.assertEqual(child.stdout.read().strip(), "stopped")
        self.assertEqual(self.client.get(self.agent, task_id)["result"]["summary"], "finished in the grace period")

    def test_input_requested_is_an_exception_the_handler_lets_through(self) -> None:
        self.assertTrue(issubclass(InputRequested, Exception))


if __name__ == "__main__":
    unittest.main()
