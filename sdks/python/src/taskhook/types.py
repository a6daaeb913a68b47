"""The API's bodies as TypedDicts (at run time plain dicts)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict


class ConversationMessage(TypedDict):
    role: str
    content: str


class Progress(TypedDict):
    current_step: str
    steps_completed: int
    total_steps: int


class InputRequest(TypedDict):
    message: str
    requested_at: str


class TaskErrorBody(TypedDict):
    code: str
    message: str


class _TaskRequired(TypedDict):
    task_id: str
    status: str
    created_at: str
    agent_uuid: str
    message: str
    messages: List[ConversationMessage]
    priority: int
    metadata: Dict[str, Any]


class Task(_TaskRequired, total=False):
    """A task as ``GET /agent/:id/task/:taskId`` returns it."""

    concurrency_key: Optional[str]
    attempt: int
    max_attempts: int
    last_error: Optional[Dict[str, Any]]
    available_at: Optional[str]
    estimated_start: str
    started_at: str
    progress: Progress
    input_request: InputRequest
    completed_at: str
    result: Dict[str, Any]
    failed_at: str
    error: TaskErrorBody
    cancelled_at: str


class SubmitResult(TypedDict):
    task_id: str
    status: str
    poll_url: str
    cancel_url: str


class Pagination(TypedDict):
    page: int
    limit: int
    total: int
    total_pages: int


class TaskList(TypedDict):
    tasks: List[Task]
    pagination: Pagination


class MessageResult(TypedDict):
    task_id: str
    status: str
    message_received: bool


class CancelResult(TypedDict):
    task_id: str
    status: str
    cancelled_at: str


class ClaimedTask(TypedDict):
    """One task of a claim answer."""

    task_id: str
    lease_id: str
    message: str
    messages: List[ConversationMessage]
    priority: int
    metadata: Dict[str, Any]
    attempt: int
    lease_expires_at: str
    timeout_at: str
    traceparent: str
    concurrency_key: Optional[str]


class _TriggerRequired(TypedDict):
    uuid: str
    agent_uuid: str
    name: str
    message_template: str
    enabled: bool
    webhook_url: str
    created_at: str
    updated_at: str


class Trigger(_TriggerRequired, total=False):
    """A webhook trigger; ``webhook_secret`` only when the server made it, just now.

    ``verification`` is the signature scheme without its secret: ``{"type"}``, plus
    ``tolerance_seconds`` for standard_webhooks, stripe and slack. ``concurrency_key`` is the
    template of its tasks' key (None: none).
    """

    webhook_secret: str
    verification: Dict[str, Any]
    concurrency_key: Optional[str]


class TriggerList(TypedDict):
    triggers: List[Trigger]
    pagination: Pagination
