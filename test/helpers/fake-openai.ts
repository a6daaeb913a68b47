import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake upstream received. */
export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown> | null;
}

/**
 * A small OpenAI-shaped server on loopback. Its behaviour is chosen by the requested model:
 * - anything else: a normal answer ("Hello there", usage 11 in / 7 out), streamed when asked;
 * - `gated`: streams one chunk, then waits for `release()` before the rest;
 * - `rate-limited`: 429 with OpenAI's error body and Retry-After;
 * - `broken`: 500 with a plain-text body;
 * - `hang`: never answers (until the caller goes away: `closed` counts such requests);
 * - `stall`: streams one chunk, then never another;
 * - `reset`: streams one chunk, then drops the connection;
 * - `inband`: streams one chunk, then an error event inside the 200 stream, then `[DONE]`;
 * - `findings`: answers a review as fenced JSON; `ask`: calls the request_input tool when offered;
 * - `huge`: a 256 KiB answer, or streamed: one event that never ends (up to 4 MiB, while read);
 * - `long`: streamed: small whole events, 4 MiB in all (while read);
 * - `hello-world`: streamed: "Hello", ", ", "world", then nothing more (until the caller goes away);
 * - `no-usage`: answers without a usage object, streamed or not (no usage chunk even when asked).
 * POST /responses answers a Response ("Hello there", usage 11 in (4 cached) / 7 out), streamed as named
 * events when asked; `failed` ends with response.failed, `cut` ends the stream before a terminal event.
 * GET /models lists two models; a key of `bad-key` gets 401, one of `slow-key` no answer at all,
 * one of `huge-models-key` a 2 MiB list. `state.modelsPeak` is the most /models requests open at once.
 */
export async function startFakeOpenAi() {
  const seen: SeenRequest[] = [];
  let releaseGate: () => void = () => undefined;
  let gate = new Promise<void>((resolve) => {
    releaseGate = resolve;
  });
  const state = { closed: 0, modelsOpen: 0, modelsPeak: 0 };
  const open = new Set<ServerResponse>();

  const server: Server = createServer(async (req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text ? (JSON.parse(text) as Record<string, unknown>) : null;
    const path = (req.url ?? '').replace(/^\/v1/, '');
    seen.push({ method: req.method ?? '', path, headers: req.headers, body });
    if (req.method === 'GET' && path === '/models') {
      state.modelsOpen += 1;
      state.modelsPeak = Math.max(state.modelsPeak, state.modelsOpen);
      res.once('close', () => {
        state.modelsOpen -= 1;
      });
    }
    if (req.headers.authorization === 'Bearer bad-key')
      return json(res, 401, errorBody('Incorrect API key provided', 'invalid_api_key'));
    if (req.headers.authorization === 'Bearer slow-key') return; // never answers
    if (req.method === 'GET' && path === '/models') {
      if (req.headers.authorization === 'Bearer huge-models-key') {
        const many = Array.from({ length: 20_000 }, (_, i) => model(`m-${i}-${'x'.repeat(40)}`));
        return json(res, 200, { object: 'list', data: many });
      }
      return json(res, 200, { object: 'list', data: [model('gpt-4o-mini'), model('gpt-4o')] });
    }
    if (req.method === 'POST' && path === '/responses' && body) return answerResponse(body, res);
    if (req.method !== 'POST' || path !== '/chat/completions' || !body)
      return json(res, 404, errorBody('Not found', null));
    await answer(body, req, res);
  });

  async function answer(body: Record<string, unknown>, req: IncomingMessage, res: ServerResponse) {
    const name = String(body.model);
    if (name === 'rate-limited') {
      res.setHeader('retry-after', '7');
      res.setHeader('x-upstream-secret-header', 'not relayed');
      return json(res, 429, errorBody('Rate limit reached for requests', 'rate_limit_exceeded'));
    }
    if (name === 'broken') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      return res.end('boom: the model server fell over');
    }
    if (name === 'hang') {
      req.socket.once('close', () => {
        state.closed += 1;
      });
      return;
    }
    if (name === 'huge' && body.stream !== true) {
      return json(res, 200, { ...completion(name, body), padding: 'x'.repeat(256 * 1024) });
    }
    if (name === 'no-usage' && body.stream !== true) {
      const { usage: _none, ...rest } = completion(name, body);
      return json(res, 200, rest);
    }
    if (body.stream !== true) return json(res, 200, completion(name, body));
    if (name === 'huge' || name === 'long') return streamFlood(res, name);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const send = (data: unknown) => res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`);
    send(chunk(name, { role: 'assistant', content: '' }));
    send(chunk(name, { content: 'Hello' }));
    if (name === 'hello-world') {
      send(chunk(name, { content: ', ' }));
      send(chunk(name, { content: 'world' }));
      return;
    }
    if (name === 'gated') await gate;
    if (name === 'stall') return;
    // Let the chunks reach the wire first: destroying drops whatever is still queued.
    if (name === 'reset') return setTimeout(() => res.socket?.destroy(), 100);
    if (name === 'inband') {
      send({ error: { message: 'provider overloaded', type: 'server_error', code: 'overloaded' } });
      send('[DONE]');
      return res.end();
    }
    send(chunk(name, { content: ' there' }));
    send(chunk(name, {}, 'stop'));
    const options = body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage && name !== 'no-usage') send({ ...chunk(name, {}), choices: [], usage: USAGE });
    send('[DONE]');
    res.end();
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    seen,
    state,
    /** Lets the `gated` stream finish. */
    release: () => releaseGate(),
    resetGate: () => {
      gate = new Promise<void>((resolve) => {
        releaseGate = resolve;
      });
    },
    async close() {
      releaseGate();
      for (const res of open) res.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/** The Responses API's usage object of every fake answer. */
export const RESPONSES_USAGE = {
  input_tokens: 11,
  input_tokens_details: { cached_tokens: 4 },
  output_tokens: 7,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 18,
};

function responseObject(name: string, status: string, withOutput: boolean) {
  const output = withOutput
    ? [
        {
          id: 'msg_fake',
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Hello there', annotations: [] }],
        },
      ]
    : [];
  return {
    id: 'resp_fake',
    object: 'response',
    created_at: 1_700_000_000,
    status,
    model: `${name}-2025-04-14`,
    output,
    error: status === 'failed' ? { code: 'server_error', message: 'the model failed' } : null,
    usage: withOutput || status === 'failed' ? RESPONSES_USAGE : null,
  };
}

/** The Responses API: a whole Response, or its stream of named events. */
function answerResponse(body: Record<string, unknown>, res: ServerResponse) {
  const name = String(body.model);
  if (name === 'rate-limited')
    return json(res, 429, errorBody('Rate limit reached for requests', 'rate_limit_exceeded'));
  if (body.stream !== true)
    return json(res, 200, responseObject(name, name === 'failed' ? 'failed' : 'completed', true));
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  let sequence = 0;
  const send = (type: string, data: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
  send('response.created', { response: responseObject(name, 'in_progress', false) });
  send('response.output_text.delta', { item_id: 'msg_fake', output_index: 0, content_index: 0, delta: 'Hello' });
  if (name === 'cut') return res.end();
  send('response.output_text.delta', { item_id: 'msg_fake', output_index: 0, content_index: 0, delta: ' there' });
  if (name === 'failed') send('response.failed', { response: responseObject(name, 'failed', false) });
  else send('response.completed', { response: responseObject(name, 'completed', true) });
  res.end();
}

export type FakeOpenAi = Awaited<ReturnType<typeof startFakeOpenAi>>;

export const USAGE = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 };

/** Streams 4 MiB while the reader keeps up: one unended event (`huge`) or many small ones (`long`). */
async function streamFlood(res: ServerResponse, name: string) {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const piece =
    name === 'huge' ? 'x'.repeat(16 * 1024) : `data: ${JSON.stringify(chunk(name, { content: 'y'.repeat(900) }))}\n\n`;
  if (name === 'huge') res.write('data: ');
  for (let sent = 0; sent < 4 * 1024 * 1024 && !res.destroyed; sent += piece.length) {
    if (!res.write(piece)) await drainedOrClosed(res);
  }
  res.end();
}

function drainedOrClosed(res: ServerResponse) {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const errorBody = (message: string, code: string | null) => ({
  error: { message, type: 'invalid_request_error', param: null, code },
});

const model = (id: string) => ({ id, object: 'model', created: 1_700_000_000, owned_by: 'fake' });

export const REVIEW = {
  summary: 'One problem',
  findings: [{ file: 'a.ts', line: 3, severity: 'high', message: 'null dereference', extra: 'dropped' }],
  verdict: 'dropped too',
};

function message(name: string, body: Record<string, unknown>) {
  if (name === 'findings') return { role: 'assistant', content: `\`\`\`json\n${JSON.stringify(REVIEW)}\n\`\`\`` };
  if (name === 'ask' && Array.isArray(body.tools)) {
    const call = {
      id: 'call_1',
      type: 'function',
      function: { name: 'request_input', arguments: '{"message":"Which branch?"}' },
    };
    return { role: 'assistant', content: null, tool_calls: [call] };
  }
  return { role: 'assistant', content: 'Hello there' };
}

function completion(name: string, body: Record<string, unknown>) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: `${name}-2024-07-18`,
    choices: [{ index: 0, message: message(name, body), finish_reason: 'stop' }],
    usage: USAGE,
  };
}

function chunk(name: string, delta: Record<string, unknown>, finish: string | null = null) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: `${name}-2024-07-18`,
    choices: [{ index: 0, delta, finish_reason: finish }],
  };
}
