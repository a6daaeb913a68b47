import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import { request } from 'undici';
import { isPrivateAddress } from '../../../lib/outbound.js';
import type { FairOutbound } from '../../../lib/outbound-fair.js';
import { retryAfterMs } from '../../../lib/retry-after.js';
import { signatureHeader } from '../../../lib/standard-webhooks.js';
import { iso } from '../../../lib/time.js';
import { claimItemOf } from '../../tasks/tasks-view.js';
import type { PushOutcome, PushRun, PushRuntime } from '../push-runtime.js';
import {
  DEFAULT_LEASE_SECONDS,
  DEFAULT_TIMEOUT_SECONDS,
  deliveryFailed,
  outcomeOfAnswer,
  taskCancelledBody,
  taskRunBody,
} from './http-runtime-fns.js';
import type { HttpRuntime } from './http-schema.js';

/** How long the one `task.cancelled` attempt may take. */
const CANCEL_TIMEOUT_MS = 10_000;

class TooLarge extends Error {}

/** The answer's body as text, refused past `limit` bytes (an agent cannot make us hold more). */
async function textOf(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) throw new TooLarge();
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

/**
 * The `http` runtime: each run POSTs a signed `task.run` webhook (Standard Webhooks, the owner's
 * signing secrets, `webhook-id` = the lease id) to the agent's URL through the outbound guard, and
 * turns the answer into an outcome (see outcomeOfAnswer). Cancel or timeout closes the request at
 * once; `cancelled` sends one signed `task.cancelled`.
 */
export function createHttpRuntime(deps: {
  signingSecrets: (workspaceUuid: string) => Promise<string[]>;
  /** The outbound guard's per-account lanes: private addresses refused at connect time, no redirects. */
  outbound: Pick<FairOutbound, 'forAccount'>;
  allowPrivate: boolean;
  publicUrl: string;
  /** The largest answer body read, in bytes. */
  maxAnswerBytes: number;
  now: () => number;
}): PushRuntime<HttpRuntime> {
  async function post(args: {
    url: string;
    workspaceUuid: string;
    headers: Record<string, string> | undefined;
    id: string;
    body: string;
    traceparent?: string;
    signal: AbortSignal;
  }) {
    const host = new URL(args.url).hostname.replace(/^\[|\]$/g, '');
    // A literal address never reaches the guard's name resolution: check it here.
    if (!deps.allowPrivate && isIP(host) && isPrivateAddress(host)) {
      const err: NodeJS.ErrnoException = new Error(`${host} is a private or reserved address`);
      err.code = 'EPRIVATEADDRESS';
      throw err;
    }
    const timestamp = Math.floor(deps.now() / 1000);
    const secrets = await deps.signingSecrets(args.workspaceUuid);
    return request(args.url, {
      method: 'POST',
      body: args.body,
      dispatcher: deps.outbound.forAccount(args.workspaceUuid),
      signal: args.signal,
      headers: {
        ...args.headers,
        'content-type': 'application/json',
        'user-agent': 'taskhook-runtime/1',
        ...(args.traceparent ? { traceparent: args.traceparent } : {}),
        'webhook-id': args.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(args.id, timestamp, args.body, secrets),
      },
    });
  }

  return {
    async run(run: PushRun<HttpRuntime>): Promise<PushOutcome> {
      const { task, runtime } = run;
      const timeoutSeconds = runtime.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS;
      const timeout = AbortSignal.timeout(timeoutSeconds * 1000);
      const signal = AbortSignal.any([run.signal, timeout]);
      const item = claimItemOf(task);
      const body = taskRunBody(item, task.agentUuid, deps.publicUrl, iso(deps.now()));
      const headers = runtime.headers;
      try {
        const res = await post({
          url: runtime.url,
          workspaceUuid: task.workspaceUuid,
          headers,
          id: item.lease_id,
          body,
          traceparent: run.traceparent,
          signal,
        });
        const text = await textOf(res.body, deps.maxAnswerBytes);
        return outcomeOfAnswer({
          status: res.statusCode,
          body: text,
          retryAfterMs: retryAfterMs(res.headers['retry-after'], deps.now()),
          leaseSeconds: runtime.lease_seconds ?? DEFAULT_LEASE_SECONDS,
        });
      } catch (err) {
        if (run.signal.aborted) return { kind: 'aborted' };
        if (err instanceof TooLarge) {
          const message = `The agent's answer is larger than ${deps.maxAnswerBytes} bytes`;
          return { kind: 'failed', code: 'INVALID_AGENT_RESPONSE', message, retryable: false, retryAfterMs: null };
        }
        if (timeout.aborted) return deliveryFailed(`The agent did not answer within ${timeoutSeconds} s`);
        const e = err as NodeJS.ErrnoException;
        if (e.code === 'EPRIVATEADDRESS')
          return deliveryFailed(`Refused: ${e.message} (private addresses are not called)`);
        return deliveryFailed(`The agent could not be reached: ${String(e.code ?? e.message).slice(0, 200)}`);
      }
    },

    async cancelled({ task, runtime }): Promise<void> {
      if (!task.leaseId) return;
      const body = taskCancelledBody(task.uuid, task.agentUuid, task.leaseId, iso(deps.now()));
      try {
        const res = await post({
          url: runtime.url,
          workspaceUuid: task.workspaceUuid,
          headers: runtime.headers,
          id: randomUUID(),
          body,
          signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS),
        });
        await res.body.dump().catch(() => undefined);
      } catch {
        // One attempt; its answer (or none) changes nothing.
      }
    },
  };
}
