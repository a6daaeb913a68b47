from __future__ import annotations

import base64
import email.message
import hashlib
import hmac
import json
import time
import unittest

from tests import support  # noqa: F401  (puts src on the path)
from taskhook import TaskhookError, WebhookVerificationError, verify_webhook

KEY = b"0123456789abcdef0123456789abcdef"
SECRET = "whsec_" + base64.b64encode(KEY).decode()
BODY = json.dumps({"type": "task.completed", "timestamp": "2026-01-01T00:00:00Z", "data": {"task_id": "x"}})


def signed(body: str = BODY, *, key: bytes = KEY, ts: int = 0, wid: str = "msg_1") -> dict[str, str]:
    stamp = str(ts or int(time.time()))
    mac = hmac.new(key, f"{wid}.{stamp}.{body}".encode(), hashlib.sha256).digest()
    return {"webhook-id": wid, "webhook-timestamp": stamp, "webhook-signature": "v1," + base64.b64encode(mac).decode()}


class VerifyWebhookTest(unittest.TestCase):
    def test_accepts_a_signed_body_as_bytes_or_str_and_returns_it(self) -> None:
        self.assertEqual(verify_webhook(BODY.encode(), signed(), SECRET)["type"], "task.completed")
        self.assertEqual(verify_webhook(BODY, signed(), SECRET)["data"], {"task_id": "x"})

    def test_header_names_are_case_insensitive_in_any_mapping(self) -> None:
        upper = {k.upper(): v for k, v in signed().items()}
        self.assertEqual(verify_webhook(BODY, upper, SECRET)["type"], "task.completed")
        message = email.message.Message()
        for k, v in signed().items():
            message[k.title()] = v
        self.assertEqual(verify_webhook(BODY, message, SECRET)["type"], "task.completed")

    def test_a_secret_without_prefix_a_list_and_other_versions(self) -> None:
        headers = signed()
        headers["webhook-signature"] = "v2,abc " + headers["webhook-signature"]
        self.assertTrue(verify_webhook(BODY, headers, base64.b64encode(KEY).decode()))
        other = "whsec_" + base64.b64encode(b"x" * 32).decode()
        self.assertTrue(verify_webhook(BODY, headers, [other, SECRET]))

    def test_refuses_changed_body_other_secret_old_timestamp_missing_header(self) -> None:
        other = "whsec_" + base64.b64encode(b"x" * 32).decode()
        cases = [
            (BODY + " ", signed(), SECRET),
            (BODY, signed(), other),
            (BODY, signed(ts=int(time.time()) - 301), SECRET),
            (BODY, signed(ts=int(time.time()) + 301), SECRET),
            (BODY, {k: v for k, v in signed().items() if k != "webhook-id"}, SECRET),
            ("not json", signed("not json"), SECRET),
        ]
        for payload, headers, secret in cases:
            with self.assertRaises(WebhookVerificationError):
                verify_webhook(payload, headers, secret)
        self.assertFalse(issubclass(WebhookVerificationError, TaskhookError))
        self.assertTrue(verify_webhook(BODY, signed(ts=int(time.time()) - 500), SECRET, tolerance=600))


if __name__ == "__main__":
    unittest.main()
