import { SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AcquireConnection } from '../../http/connection-limits.js';
import { startEventStream } from '../../http/stream-watch.js';
import type { CredentialCheck, Principal } from '../../lib/principal.js';
import type { Timers } from '../../lib/time.js';
import type { RpcId } from './mcp-methods.js';
import { modernResult } from './mcp-modern-fns.js';
import type { McpService } from './mcp-service.js';

/** The tool list is looked at this often while a subscription is open (changes on any instance show within 5 s). */
const LOOK_MS = 2000;

/**
 * `subscriptions/listen`: an event stream that stays open, first the acknowledgement (only
 * `toolsListChanged` is honoured), then `notifications/tools/list_changed` whenever the request's
 * tool list changes; on shutdown the listen response before the stream closes. One of the
 * workspace's open streams.
 */
export async function listen(
  deps: {
    service: McpService;
    version: string;
    credentials: CredentialCheck;
    timers: Timers;
    open: Set<() => void>;
    acquire: AcquireConnection;
  },
  request: FastifyRequest,
  reply: FastifyReply,
  principal: Principal,
  rpc: { id: RpcId; params?: unknown },
) {
  const release = deps.acquire(principal.workspaceUuid, 'stream');
  const asked = (rpc.params as { notifications?: { toolsListChanged?: unknown } } | undefined)?.notifications;
  const tools = asked?.toolsListChanged === true;
  const meta = { [SUBSCRIPTION_ID_META_KEY]: rpc.id };
  let last = tools ? await deps.service.toolsFingerprint(principal) : '';
  let stopLooking = () => {};
  const send = (message: object) => {
    if (!stream.closed) stream.raw.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
  };
  const stream = startEventStream(reply, {
    credentials: deps.credentials,
    timers: deps.timers,
    request,
    principal,
    open: deps.open,
    onEnd: () => {
      stopLooking();
      release();
      // The listen response says the server ended the subscription on purpose (a client that hung up reads nothing).
      const result = modernResult({ _meta: meta }, deps.version);
      if (reply.raw.writable)
        reply.raw.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result })}\n\n`);
    },
  });
  send({
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: tools ? { toolsListChanged: true } : {}, _meta: meta },
  });
  if (!tools) return reply;
  let looking = false;
  stopLooking = deps.timers.every(LOOK_MS, () => {
    if (looking || stream.closed) return;
    looking = true;
    deps.service
      .toolsFingerprint(principal)
      .then((now) => {
        if (now === last) return;
        last = now;
        send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: meta } });
      })
      .catch((err) => request.log.warn({ err }, 'MCP tool list look failed'))
      .finally(() => {
        looking = false;
      });
  });
  return reply;
}
