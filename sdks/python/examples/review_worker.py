"""An example agent, the Python twin of examples/review-worker.ts.

Reviews a unified diff or a source file given in the task message (or fetched from
``metadata.url``) with deterministic rules and returns findings. When the messages hold no code it
asks for input, and resumes with the user's reply.

    PYTHONPATH=sdks/python/src TASKHOOK_API_KEY=sk_service_... TASKHOOK_AGENT_ID=<agent uuid> \\
        python3 sdks/python/examples/review_worker.py
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from typing import Any, Dict, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from review_rules import is_unified_diff, looks_like_code, review, summarize  # noqa: E402

from taskhook import ClaimedTask, TaskFailure, WorkerContext, run_worker  # noqa: E402

QUESTION = "Please send the code to review: a unified diff (git diff) or a source file."
MAX_FETCH_BYTES = 1024 * 1024


def fetch_source(url: str) -> str:
    """The body at ``url``, at most 1 MiB (counted as it arrives)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as res:
            if int(res.headers.get("content-length") or 0) > MAX_FETCH_BYTES:
                raise TaskFailure(f"{url} is larger than 1 MiB", code="TOO_LARGE")
            data: bytes = res.read(MAX_FETCH_BYTES + 1)
    except urllib.error.HTTPError as err:
        raise TaskFailure(f"Fetching {url} answered HTTP {err.code}", code="FETCH_FAILED") from err
    if len(data) > MAX_FETCH_BYTES:
        raise TaskFailure(f"{url} is larger than 1 MiB", code="TOO_LARGE")
    return data.decode("utf-8", errors="replace")


def handle(task: ClaimedTask, ctx: WorkerContext) -> Dict[str, Any]:
    ctx.progress("reading the input", 0, 3, flush=True)
    url = task["metadata"].get("url")
    url = url if isinstance(url, str) else None
    # The newest user message that contains code is what to review (the first one, or a reply).
    user_texts = [m["content"] for m in task["messages"] if m["role"] == "user"]
    text: Optional[str] = next((t for t in reversed(user_texts) if is_unified_diff(t) or looks_like_code(t)), None)
    if text is None and url:
        text = fetch_source(url)
    if text is None:
        ctx.ask_for_input(QUESTION)
    ctx.progress("applying review rules", 1, 3, flush=True)
    file_name = task["metadata"].get("file")
    if not isinstance(file_name, str):
        file_name = url.split("/")[-1] if url else "input"
    reviewed = review(text, file_name)
    ctx.progress("summarising", 2, 3, flush=True)
    return {"summary": summarize(reviewed["files"], reviewed["findings"]), "findings": reviewed["findings"]}


def main() -> None:
    agent_id = os.environ.get("TASKHOOK_AGENT_ID")
    if not os.environ.get("TASKHOOK_API_KEY") or not agent_id:
        print("Set TASKHOOK_API_KEY (a platform key) and TASKHOOK_AGENT_ID (the agent to work for).", file=sys.stderr)
        sys.exit(2)
    base_url = os.environ.get("TASKHOOK_URL", "http://localhost:8080")
    print(f"review worker running for agent {agent_id} against {base_url} (Ctrl-C to stop)", flush=True)
    run_worker(agent_id, handle, concurrency=int(os.environ.get("TASKHOOK_CONCURRENCY", "4")))


if __name__ == "__main__":
    main()
