import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, LevelWithSilent, Logger } from 'pino';

type Level = Exclude<LevelWithSilent, 'silent'>;

/**
 * A request's logger that builds its pino child (with the `reqId` binding) only when a line is
 * actually written at an enabled level. Most requests log nothing at the configured level, and a
 * pino child per request (bindings serialised, redaction set up) is a measurable part of a fast
 * request's cost.
 */
class LazyRequestLogger implements FastifyBaseLogger {
  #child: FastifyBaseLogger | undefined;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly opts: ChildLoggerOptions,
  ) {}

  #real(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings, this.opts);
    return this.#child;
  }

  /** Whether a line at `level` would be written; without a child of its own level, the parent's answer. */
  #enabled(level: Level): boolean {
    if (this.#child || this.opts.level !== undefined) return true;
    return this.parent.isLevelEnabled(level);
  }

  get level(): string {
    return this.#child ? this.#child.level : (this.opts.level ?? this.parent.level);
  }
  set level(level: string) {
    this.#real().level = level;
  }

  fatal(...args: Parameters<FastifyBaseLogger['fatal']>) {
    if (this.#enabled('fatal')) this.#real().fatal(...args);
  }
  error(...args: Parameters<FastifyBaseLogger['error']>) {
    if (this.#enabled('error')) this.#real().error(...args);
  }
  warn(...args: Parameters<FastifyBaseLogger['warn']>) {
    if (this.#enabled('warn')) this.#real().warn(...args);
  }
  info(...args: Parameters<FastifyBaseLogger['info']>) {
    if (this.#enabled('info')) this.#real().info(...args);
  }
  debug(...args: Parameters<FastifyBaseLogger['debug']>) {
    if (this.#enabled('debug')) this.#real().debug(...args);
  }
  trace(...args: Parameters<FastifyBaseLogger['trace']>) {
    if (this.#enabled('trace')) this.#real().trace(...args);
  }
  silent(..._args: Parameters<FastifyBaseLogger['silent']>) {}

  child(bindings: Bindings, opts?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, opts);
  }
}

/** Fastify's `childLoggerFactory`: the request's logger, its pino child made on first use. */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  opts: ChildLoggerOptions,
): FastifyBaseLogger {
  // The app's logger is the runtime's pino instance (loggerInstance), so it answers isLevelEnabled.
  return new LazyRequestLogger(logger as Logger, bindings, opts);
}
