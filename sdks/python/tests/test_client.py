from __future__ import annotations

import os
import socket
import threading
import unittest
import uuid
from typing import List
from unittest import mock

from tests import support
from tests.support import KEY, URL, FakeServer, json_answer, needs_server

import taskhook
from taskhook import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    RateLimitError,
    ServerError,
    TaskEvent,
    TaskhookClient,
    TaskhookConnectionError,
    TaskhookError,
)


class ConfigurationTest(unittest.TestCase):
    def test_no_key_raises_value_error_naming_the_variable(self) -> None:
        with mock.patch.dict(os.environ, {}, clear=True):
            with self.assertRaisesRegex(ValueError, "TASKHOOK_API_KEY"):
                TaskhookClient()

    def test_environment_defaults_and_arguments_win(self) -> None:
        with mock.patch.dict(os.environ, {"TASKHOOK_URL": "http://127.0.0.1:9/x/", "TASKHOOK_API_KEY": "k"}):
            self.assertEqual(TaskhookClient().base_url, "http://127.0.0.1:9/x")
            self.assertEqual(TaskhookClient("http://127.0.0.1:10").base_url, "http://127.0.0.1:10")
        with mock.patch.dict(os.environ, {"TASKHOOK_API_KEY": "k"}, clear=True):
            self.assertEqual(TaskhookClient().base_url, "http://localhost:8080")

    def test_version_matches_pyproject(self) -> None:
        pyproject = os.path.join(os.path.dirname(__file__), "..", "pyproject.toml")
        with open(pyproject, encoding="utf-8") as f:
            self.assertIn(f'version = "{taskhook.__version__}"', f.read())

    def test_every_public_name_is_importable(self) -> None:
        for name in taskhook.__all__:
            self.assertTrue(hasattr(taskhook, name), name)


class TransportTest(unittest.TestCase):
    """Rules of the transport, against a scripted local server."""

    def serve(self, answers: List[support.Answer]) -> FakeServer:
        server = FakeServer(answers)
        self.addCleanup(server.close)
        return server

    def test_headers_prefix_and_user_agent(self) -> None:
        server = self.serve([json_answer(200, {"task_id": "t", "status": "queued"})])
        client = TaskhookClient(server.url + "/base/", "sk_x", headers={"X-Extra": "1"})
        client.get("a", "t")
        sent = server.requests[0]
        self.assertEqual(sent["path"], "/base/agent/a/task/t")
        self.assertEqual(sent["headers"]["Authorization"], "Bearer sk_x")
        self.assertEqual(sent["headers"]["X-Extra"], "1")
        self.assertTrue(sent["headers"]["User-Agent"].startswith(f"taskhook-python/{taskhook.__version__}"))

    def test_submit_retries_with_one_idempotency_key(self) -> None:
        server = self.serve(
            [json_answer(503, {"error": {"code": "X", "message": "busy"}}), json_answer(200, {"task_id": "t"})]
        )
        with mock.patch("taskhook._http.retry_delay", return_value=0.0):
            TaskhookClient(server.url, "k").submit("a", "hi")
        keys = {r["headers"]["Idempotency-Key"] for r in server.requests}
        self.assertEqual(len(server.requests), 2)
        self.assertEqual(len(keys), 1)

    def test_retry_after_is_honoured_and_429_carries_it(self) -> None:
        server = self.serve([json_answer(429, {"error": "slow down"}, {"Retry-After": "0"})] * 3)
        with self.assertRaises(RateLimitError) as caught:
            TaskhookClient(server.url, "k", max_retries=2).get("a", "t")
        self.assertEqual(caught.exception.retry_after, 0.0)
        self.assertEqual(caught.exception.message, "slow down")
        self.assertEqual(len(server.requests), 3)

    def test_message_is_sent_once(self) -> None:
        server = self.serve([json_answer(503, {"error": "x"})] * 3)
        with self.assertRaises(ServerError):
            TaskhookClient(server.url, "k").message("a", "t", "hi")
        self.assertEqual(len(server.requests), 1)

    def test_non_json_error_and_request_id(self) -> None:
        server = self.serve([(502, {"Content-Type": "text/html", "X-Request-Id": "r1"}, b"<html>bad</html>")])
        with self.assertRaises(ServerError) as caught:
            TaskhookClient(server.url, "k", max_retries=0).get("a", "t")
        err = caught.exception
        self.assertEqual((err.status, err.code, err.request_id, err.body), (502, None, "r1", "<html>bad</html>"))
        self.assertIn("502", str(err))

    def test_other_status_is_the_base_class(self) -> None:
        server = self.serve([json_answer(415, {"error": {"code": "UNSUPPORTED", "message": "no", "details": 1}})])
        with self.assertRaises(TaskhookError) as caught:
            TaskhookClient(server.url, "k").get("a", "t")
        self.assertIs(type(caught.exception), TaskhookError)
        self.assertEqual(caught.exception.details, 1)

    def test_no_answer_is_a_connection_error(self) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        with mock.patch("taskhook._http.retry_delay", return_value=0.0):
            with self.assertRaises(TaskhookConnectionError) as caught:
                TaskhookClient(f"http://127.0.0.1:{port}", "k").get("a", "t")
        self.assertIsNone(caught.exception.status)


@needs_server
class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = TaskhookClient(URL, KEY)
        self.addCleanup(self.client.close)
        self.agent = support.create_agent()

    def test_submit_get_list_cancel(self) -> None:
        submitted = self.client.submit(self.agent, "review this", priority=3, metadata={"k": 1})
        self.assertEqual(submitted["status"], "queued")
        task = self.client.get(self.agent, submitted["task_id"])
        self.assertEqual((task["priority"], task["metadata"]), (3, {"k": 1}))
        listed = self.client.list(self.agent, status="queued", limit=5)
        self.assertIn(submitted["task_id"], [t["task_id"] for t in listed["tasks"]])
        cancelled = self.client.cancel(self.agent, submitted["task_id"])
        self.assertEqual(cancelled["status"], "cancelled")
        self.assertEqual(self.client.wait_for(self.agent, submitted["task_id"])["status"], "cancelled")
        with self.assertRaises(BadRequestError) as caught:
            self.client.submit(self.agent, "")
        self.assertEqual(caught.exception.status, 400)

    def test_idempotency_key_gives_the_same_task(self) -> None:
        key = str(uuid.uuid4())
        first = self.client.submit(self.agent, "once", idempotency_key=key)
        second = self.client.submit(self.agent, "once", idempotency_key=key)
        self.assertEqual(first["task_id"], second["task_id"])

    def test_wait_for_times_out_with_timeout_error(self) -> None:
        task = self.client.submit(self.agent, "never claimed")
        with self.assertRaises(TimeoutError):
            self.client.wait_for(self.agent, task["task_id"], timeout=0.2, interval=0.05)

    def test_errors_for_unknown_task_and_bad_key(self) -> None:
        with self.assertRaises(NotFoundError) as caught:
            self.client.get(self.agent, str(uuid.uuid4()))
        self.assertEqual(caught.exception.status, 404)
        self.assertTrue(caught.exception.request_id)
        with self.assertRaises(AuthenticationError):
            TaskhookClient(URL, "sk_service_wrong").get(self.agent, str(uuid.uuid4()))

    def test_events_until_final_resume_and_early_close(self) -> None:
        task_id = self.client.submit(self.agent, "follow me")["task_id"]
        stream = self.client.events(self.agent, task_id)
        first = next(stream)
        self.assertIsInstance(first, TaskEvent)
        self.assertEqual(first.task["status"], "queued")
        stream.close()
        threading.Timer(0.3, lambda: self.client.cancel(self.agent, task_id)).start()
        items = list(self.client.events(self.agent, task_id, last_event_id=first.id))
        self.assertEqual(items[-1].task["status"], "cancelled")
        self.assertTrue(all(item.id > first.id for item in items))
        self.assertEqual([i.id for i in items], sorted({i.id for i in items}))
        with self.assertRaises(NotFoundError):
            next(self.client.events(self.agent, str(uuid.uuid4())))

    def test_triggers(self) -> None:
        created = self.client.create_trigger(self.agent, "gh", "Review {{payload.pr}}", enabled=False)
        self.assertTrue(created["webhook_secret"])
        trigger_id = created["uuid"]
        self.assertFalse(self.client.get_trigger(self.agent, trigger_id)["enabled"])
        self.assertTrue(self.client.update_trigger(self.agent, trigger_id, enabled=True)["enabled"])
        self.assertIn(trigger_id, [t["uuid"] for t in self.client.list_triggers(self.agent, limit=10)["triggers"]])
        rotated = self.client.rotate_trigger_secret(self.agent, trigger_id)
        self.assertNotEqual(rotated["webhook_secret"], created["webhook_secret"])
        self.assertIsNone(self.client.delete_trigger(self.agent, trigger_id))
        with self.assertRaises(NotFoundError):
            self.client.get_trigger(self.agent, trigger_id)

    def test_trigger_scheme_and_concurrency_key(self) -> None:
        stripe = {"type": "stripe", "secret": "whsec_" + "a" * 32}
        created = self.client.create_trigger(
            self.agent, "stripe", "Charge {{payload.id}}", verification=stripe, concurrency_key="{{payload.customer}}"
        )
        self.assertNotIn("webhook_secret", created)
        self.assertEqual(created["verification"], {"type": "stripe", "tolerance_seconds": 300})
        self.assertEqual(created["concurrency_key"], "{{payload.customer}}")
        trigger_id = created["uuid"]
        kept = self.client.update_trigger(self.agent, trigger_id, verification={"type": "stripe", "tolerance_seconds": 60})
        self.assertEqual((kept["verification"]["tolerance_seconds"], kept["concurrency_key"]), (60, "{{payload.customer}}"))
        cleared = self.client.update_trigger(self.agent, trigger_id, concurrency_key=None)
        self.assertIsNone(cleared["concurrency_key"])
        with self.assertRaises(BadRequestError):
            self.client.update_trigger(self.agent, trigger_id, verification={"type": "slack", "signing_secret": "x"})

    def test_submit_with_a_concurrency_key(self) -> None:
        submitted = self.client.submit(self.agent, "per customer", concurrency_key="customer-42")
        self.assertEqual(self.client.get(self.agent, submitted["task_id"])["concurrency_key"], "customer-42")
        self.client.cancel(self.agent, submitted["task_id"])


if __name__ == "__main__":
    unittest.main()
