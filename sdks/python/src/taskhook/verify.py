"""verify_webhook: checks a callback signed as Standard Webhooks."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from typing import Any, Dict, Optional, Sequence, Union, cast


_TIMESTAMP = re.compile(r"[0-9]{1,19}")


class WebhookVerificationError(Exception):
    """A callback that fails verification (signature, timestamp, headers or body)."""


def _header(headers: Any, name: str) -> Optional[str]:
    items = getattr(headers, "items", None)
    if callable(items):
        for key, value in items():
            if isinstance(key, str) and key.lower() == name:
                if isinstance(value, (list, tuple)):
                    return str(value[0]) if value else None
                return str(value)
    getter = getattr(headers, "get", None)
    if callable(getter):
        for candidate in (name, name.title(), name.upper()):
            value = getter(candidate)
            if value is not None:
                return str(value)
    return None


def _key_of(secret: str) -> bytes:
    text = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as err:
        raise WebhookVerificationError("The secret is not base64") from err


def verify_webhook(
    payload: Union[bytes, str],
    headers: Any,
    secret: Union[str, Sequence[str]],
    *,
    tolerance: int = 300,
) -> Dict[str, Any]:
    """Returns the parsed body of a verified callback; raises WebhookVerificationError otherwise.

    ``payload`` is the raw body as received, ``headers`` any mapping of the request's headers
    (names compared case-insensitively), ``secret`` the signing secret ``whsec_...`` or a list of them.
    """
    webhook_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signature = _header(headers, "webhook-signature")
    if not webhook_id or not timestamp or not signature:
        raise WebhookVerificationError("Missing webhook-id, webhook-timestamp or webhook-signature")
    # 1-19 ASCII digits only: str.isdigit() and int() also take other scripts' digits ("١٢٣", "²").
    if _TIMESTAMP.fullmatch(timestamp) is None:
        raise WebhookVerificationError("webhook-timestamp is not a Unix time")
    if abs(time.time() - int(timestamp)) > tolerance:
        raise WebhookVerificationError("webhook-timestamp is outside the tolerance")
    body = payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)
    signed = f"{webhook_id}.{timestamp}.".encode("utf-8") + body
    given = []
    for entry in signature.split(" "):
        if entry.startswith("v1,"):
            try:
                given.append(base64.b64decode(entry[3:]))
            except (binascii.Error, ValueError):
                continue
    secrets = [secret] if isinstance(secret, str) else list(secret)
    for candidate in secrets:
        expected = hmac.new(_key_of(candidate), signed, hashlib.sha256).digest()
        if any(hmac.compare_digest(expected, g) for g in given):
            break
    else:
        raise WebhookVerificationError("No signature matches")
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise WebhookVerificationError("The payload is not JSON") from err
    if not isinstance(parsed, dict):
        raise WebhookVerificationError("The payload is not a JSON object")
    return cast(Dict[str, Any], parsed)
