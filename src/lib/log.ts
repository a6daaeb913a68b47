/**
 * The part of the logger background work needs: a warning with its context object. The
 * process logger (pino) satisfies it; tests pass `{ warn: () => undefined }`.
 */
export interface Log {
  warn(obj: object, msg: string): void;
}

/** The part of the logger that records what happened (the mailer's links when there is no SMTP). */
export interface InfoLog {
  info(obj: object, msg: string): void;
}
