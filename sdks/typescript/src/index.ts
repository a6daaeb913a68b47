export { TaskhookClient } from './client.js';
export {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  TaskhookConnectionError,
  TaskhookError,
} from './errors.js';
export type { ClientOptions } from './http.js';
export type {
  ClaimedTask,
  ConversationMessage,
  Pagination,
  SubmitInput,
  SubmitResult,
  TaskEvent,
  TaskResult,
  TaskStatus,
  TaskView,
  Trigger,
  TriggerVerification,
  TriggerVerificationInput,
  WebhookEvent,
} from './types.js';
export { verifyWebhook, WebhookVerificationError } from './verify.js';
export { VERSION } from './version.js';
export type { RunningWorker, TaskHandler, WorkerContext, WorkerOptions } from './worker.js';
export { InputRequested, runWorker, TaskFailure } from './worker.js';
