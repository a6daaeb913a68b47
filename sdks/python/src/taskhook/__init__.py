"""taskhook: a client and a pull worker for the taskhook API (standard library only)."""

from ._version import __version__
from .client import TaskEvent, TaskhookClient
from .errors import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
    TaskhookConnectionError,
    TaskhookError,
)
from .types import (
    CancelResult,
    ClaimedTask,
    ConversationMessage,
    MessageResult,
    Pagination,
    Progress,
    SubmitResult,
    Task,
    TaskList,
    Trigger,
    TriggerList,
)
from .verify import WebhookVerificationError, verify_webhook
from .worker import InputRequested, TaskFailure, Worker, WorkerContext, run_worker

__all__ = [
    "AuthenticationError",
    "BadRequestError",
    "CancelResult",
    "ClaimedTask",
    "ConflictError",
    "ConversationMessage",
    "InputRequested",
    "MessageResult",
    "NotFoundError",
    "Pagination",
    "PermissionDeniedError",
    "Progress",
    "RateLimitError",
    "ServerError",
    "SubmitResult",
    "Task",
    "TaskEvent",
    "TaskFailure",
    "TaskList",
    "TaskhookClient",
    "TaskhookConnectionError",
    "TaskhookError",
    "Trigger",
    "TriggerList",
    "WebhookVerificationError",
    "Worker",
    "WorkerContext",
    "__version__",
    "run_worker",
    "verify_webhook",
]
