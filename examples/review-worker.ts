/**
 * An example agent: reviews a unified diff or a source file given in the task message (or
 * fetched from `metadata.url`) with deterministic rules and returns findings. When the message
 * holds no code it asks for input, and resumes with the user's reply.
 *
 *   TASKHOOK_API_KEY=sk_service_… TASKHOOK_AGENT_ID=<agent uuid> npm run example:worker
 */
import { runWorker, TaskFailure } from '@taskhook/sdk';
import { isUnifiedDiff, looksLikeCode, review, summarize } from './review-rules.js';

const baseUrl = process.env.TASKHOOK_URL ?? 'http://localhost:8080';
const apiKey = process.env.TASKHOOK_API_KEY;
const agentId = process.env.TASKHOOK_AGENT_ID;
if (!apiKey || !agentId) {
  console.error('Set TASKHOOK_API_KEY (a platform key) and TASKHOOK_AGENT_ID (the agent to work for).');
  process.exit(2);
}

const MAX_FETCH_BYTES = 1024 * 1024;

async function fetchSource(url: string, signal: AbortSignal): Promise<string> {
  const res = await fetch(url, { signal, redirect: 'follow' });
  if (!res.ok) throw new TaskFailure(`Fetching ${url} answered HTTP ${res.status}`, { code: 'FETCH_FAILED' });
  const tooLarge = () => new TaskFailure(`${url} is larger than 1 MiB`, { code: 'TOO_LARGE' });
  if (Number(res.headers.get('content-length') ?? 0) > MAX_FETCH_BYTES) {
    await res.body?.cancel();
    throw tooLarge();
  }
  // Count bytes as they arrive: never hold more than the limit of a huge (or endless) body.
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    // Leaving the loop cancels the body.
    if (size > MAX_FETCH_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const worker = runWorker({
  baseUrl,
  apiKey,
  agentId,
  concurrency: Number(process.env.TASKHOOK_CONCURRENCY ?? 4),
  async handler(task, ctx) {
    await ctx.progress('reading the input', 0, 3, true);
    const url = typeof task.metadata.url === 'string' ? task.metadata.url : undefined;
    // The newest user message that contains code is what to review (the first one, or a reply).
    const userTexts = task.messages.filter((m) => m.role === 'user').map((m) => m.content);
    let text = [...userTexts].reverse().find((t) => isUnifiedDiff(t) || looksLikeCode(t));
    if (!text && url) text = await fetchSource(url, ctx.signal);
    if (!text) {
      return ctx.askForInput('Please send the code to review: a unified diff (git diff) or a source file.');
    }
    await ctx.progress('applying review rules', 1, 3, true);
    const fileName = typeof task.metadata.file === 'string' ? task.metadata.file : (url?.split('/').pop() ?? 'input');
    const { files, findings } = review(text, fileName);
    await ctx.progress('summarising', 2, 3, true);
    return { summary: summarize(files, findings), findings };
  },
});

console.log(`review worker running for agent ${agentId} against ${baseUrl} (Ctrl-C to stop)`);
await worker.done;
