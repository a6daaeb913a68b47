/**
 * The part of the logger background work needs: a warning with its context object. The
 * process logger (pino) satisfies it; tests pass `{ warn: () => undefined }`.
 */
export interface Log {
  warn(obj: object, msg: string): void;
}
