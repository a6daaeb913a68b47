from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys
import threading
import time
import unittest
from typing import Any, List

from tests import support
from tests.support import FakeServer, json_answer
from tests.test_verify import BODY, SECRET, signed

from taskhook import TaskhookClient, TaskhookError, WebhookVerificationError, verify_webhook


class NoRedirectsTest(unittest.TestCase):
    """No request follows a redirect: the key must not travel to a Location chosen by the answer."""

    def serve(self, answers: List[support.Answer]) -> FakeServer:
        server = FakeServer(answers)
        self.addCleanup(server.close)
        return server

    def test_a_3xx_raises_with_its_status_and_nothing_goes_to_the_location(self) -> None:
        target = self.serve([json_answer(200, {"task_id": "t"})] * 4)
        moved = (302, {"Location": target.url + "/stolen", "Content-Type": "text/plain"}, b"moved")
        for method in ("get", "events"):
            server = self.serve([moved])
            client = TaskhookClient(server.url, "sk_secret", max_retries=2)
            self.addCleanup(client.close)
            with self.assertRaises(TaskhookError) as caught:
                if method == "get":
                    client.get("a", "t")
                else:
                    next(client.events("a", "t"))
            self.assertEqual(caught.exception.status, 302)
            self.assertEqual(len(server.requests), 1)
        self.assertEqual(target.requests, [])

    def test_a_redirect_while_resuming_an_event_stream_is_not_reconnected(self) -> None:
        event = b'id: 1\nevent: task\ndata: {"task_id": "t", "status": "running"}\n\n'
        moved = (307, {"Location": "http://127.0.0.1:9/x"}, b"")
        server = self.serve([(200, {"Content-Type": "text/event-stream"}, event), moved, moved, moved])
        client = TaskhookClient(server.url, "sk_secret")
        self.addCleanup(client.close)
        stream = client.events("a", "t")
        self.assertEqual(next(stream).id, 1)
        with self.assertRaises(TaskhookError) as caught:
            next(stream)
        self.assertEqual(caught.exception.status, 307)
        self.assertEqual(len(server.requests), 2)


class RetryAfterTest(unittest.TestCase):
    def test_a_503_with_retry_after_1_is_retried_after_at_least_one_second(self) -> None:
        server = FakeServer(
            [json_answer(503, {"error": "busy"}, {"Retry-After": "1"}), json_answer(200, {"task_id": "t"})]
        )
        self.addCleanup(server.close)
        started = time.monotonic()
        TaskhookClient(server.url, "k").get("a", "t")
        self.assertEqual(len(server.requests), 2)
        self.assertGreaterEqual(time.monotonic() - started, 1.0)


class TimestampDigitsTest(unittest.TestCase):
    def test_only_1_to_19_ascii_digits_are_a_timestamp(self) -> None:
        now = str(int(time.time()))
        bad = ["١٢٣", "²", "+" + now, " " + now, now + " ", now + "\n", now[:3] + "_" + now[3:], "-1", "", "1" * 20]
        for stamp in bad:
            headers = {**signed(), "webhook-timestamp": stamp}
            with self.assertRaises(WebhookVerificationError, msg=repr(stamp)):
                verify_webhook(BODY, headers, SECRET)
        # Arabic-Indic digits of the current time: int() would take them; the check does not.
        arabic = now.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
        with self.assertRaises(WebhookVerificationError):
            verify_webhook(BODY, {**signed(), "webhook-timestamp": arabic}, SECRET)
        self.assertEqual(verify_webhook(BODY, signed(), SECRET)["type"], "task.completed")
        with self.assertRaises(WebhookVerificationError):
            verify_webhook(BODY, {**signed(), "webhook-timestamp": "9" * 19}, SECRET)


class RunSpanTest(unittest.TestCase):
    """The run's span is current in every handler, async ones after an await too (needs opentelemetry-api)."""

    def test_concurrent_first_runs_and_awaits_keep_the_run_span(self) -> None:
        if importlib.util.find_spec("opentelemetry") is None:
            self.skipTest("opentelemetry-api is not installed")
        from taskhook import _otel

        # As in a fresh worker process: nothing imported yet, so the first run's import takes a while.
        for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
            del sys.modules[name]
        _otel._loaded = False
        _otel._api = None
        spans: List[Any] = []
        start = threading.Barrier(8)

        async def handler(n: int) -> None:
            await asyncio.sleep(0.01)
            trace = importlib.import_module("opentelemetry.trace")
            spans.append((n, trace.get_current_span().get_span_context().span_id))

        def run(n: int) -> None:
            traceparent = f"00-{'ab' * 16}-{n + 1:016x}-01"
            start.wait()
            with _otel.run_context(traceparent):
                coro = handler(n)

                async def main() -> None:
                    await coro

                asyncio.run(main())

        threads = [threading.Thread(target=run, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(sorted(spans), [(n, n + 1) for n in range(8)])


if __name__ == "__main__":
    unittest.main()
