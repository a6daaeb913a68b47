export type { ClaimedTask, SubmitInput, SubmitResult, TaskStatus, TaskView } from './client.js';
export { TaskhookClient } from './client.js';
export type { HttpOptions } from './http.js';
export { TaskhookError } from './http.js';
export type { RunningWorker, TaskHandler, TaskResult, WorkerContext, WorkerOptions } from './worker.js';
export { InputRequested, runWorker, TaskFailure } from './worker.js';
