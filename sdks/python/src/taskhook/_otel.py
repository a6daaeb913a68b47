"""Runs a handler in the OpenTelemetry context of its run, when opentelemetry-api is installed."""

from __future__ import annotations

import contextlib
import importlib
import re
import threading
from typing import Any, Iterator, Optional

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_api: Optional[Any] = None
_loaded = False
_lock = threading.Lock()


def _load() -> Optional[Any]:
    # Handlers start on several threads at once: the first import must finish before any of them
    # reads the result (marking it loaded first let a second thread run its handler with no span).
    global _api, _loaded
    with _lock:
        if not _loaded:
            try:
                trace = importlib.import_module("opentelemetry.trace")
                context = importlib.import_module("opentelemetry.context")
                _api = (trace, context)
            except ImportError:
                _api = None
            _loaded = True
    return _api


@contextlib.contextmanager
def run_context(traceparent: str) -> Iterator[None]:
    """Makes the run's span (a non-recording remote span) current for the block, when possible."""
    match = _TRACEPARENT.match(traceparent or "")
    api = _load() if match else None
    if api is None or match is None:
        yield
        return
    trace, context = api
    span_context = trace.SpanContext(
        trace_id=int(match.group(1), 16),
        span_id=int(match.group(2), 16),
        is_remote=True,
        trace_flags=trace.TraceFlags(int(match.group(3), 16)),
    )
    token = context.attach(trace.set_span_in_context(trace.NonRecordingSpan(span_context)))
    try:
        yield
    finally:
        context.detach(token)
