#!/usr/bin/env node
// The host's side of scripts/check-container.sh: one task end to end through published ports.
//
//   node task.mjs run <submit base url> <worker base url> <platform key>
//     creates an agent, submits a task through the first address, claims and completes it as a
//     worker through the second, and reads it back through the first; prints {"agent","task"}.
//   node task.mjs read <base url> <platform key> <agent uuid> <task uuid>
//     reads the task back and checks that it is completed with the result `run` gave it.
//   node task.mjs wait-claim <base url> <platform key> <agent uuid> <seconds>
//     a long-poll claim that prints how long the server took to answer (for the drain on SIGTERM).
//
// Plain fetch, so it needs nothing but Node.js. Exits non-zero with a message on any surprise.

const [command, ...args] = process.argv.slice(2);
const RESULT = { summary: 'done by the container check', checked: true };

function fail(message) {
  process.stderr.write(`task.mjs: ${message}\n`);
  process.exit(1);
}

async function call(base, key, method, path, body) {
  // AbortSignal.timeout's timer does not keep Node.js running, and neither does a fetch whose
  // pooled socket undici has unreferenced: a request that had not answered yet let Node.js exit
  // with 13 (unsettled top-level await) and no message, which the check read as "no answer". This
  // timer keeps the process alive until the answer comes, and says so when it does not.
  const timer = setTimeout(() => fail(`${method} ${base}${path}: no answer within 45 s`), 45_000);
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) fail(`${method} ${base}${path} answered ${res.status}: ${text}`);
    return JSON.parse(text);
  } finally {
    clearTimeout(timer);
  }
}

async function run(submitBase, workerBase, key) {
  const agent = await call(submitBase, key, 'POST', '/agent', { name: `container-check-${Date.now()}` });
  const submitted = await call(submitBase, key, 'POST', `/agent/request/${agent.uuid}`, {
    message: 'hello from the container check',
  });
  if (submitted.status !== 'queued') fail(`submitted task is ${submitted.status}, not queued`);
  const claim = await call(workerBase, key, 'POST', `/agent/${agent.uuid}/tasks/claim`, {
    worker_id: 'container-check',
    wait_seconds: 10,
  });
  const claimed = claim.tasks.find((t) => t.task_id === submitted.task_id);
  if (!claimed) fail(`the claim through ${workerBase} did not hand out task ${submitted.task_id}`);
  await call(workerBase, key, 'POST', `/agent/${agent.uuid}/task/${claimed.task_id}/complete`, {
    lease_id: claimed.lease_id,
    result: RESULT,
  });
  await read(submitBase, key, agent.uuid, submitted.task_id);
  process.stdout.write(`${JSON.stringify({ agent: agent.uuid, task: submitted.task_id })}\n`);
}

async function read(base, key, agentUuid, taskId) {
  const task = await call(base, key, 'GET', `/agent/${agentUuid}/task/${taskId}`);
  if (task.status !== 'completed') fail(`task ${taskId} is ${task.status}, not completed`);
  if (task.result?.summary !== RESULT.summary || task.result?.checked !== true) {
    fail(`task ${taskId} has result ${JSON.stringify(task.result)}`);
  }
}

async function waitClaim(base, key, agentUuid, seconds) {
  const started = Date.now();
  const claim = await call(base, key, 'POST', `/agent/${agentUuid}/tasks/claim`, {
    worker_id: 'container-check-drain',
    wait_seconds: Number(seconds),
  });
  process.stdout.write(`${JSON.stringify({ tasks: claim.tasks.length, seconds: (Date.now() - started) / 1000 })}\n`);
}

const commands = {
  run: () => run(args[0], args[1], args[2]),
  read: () => read(args[0], args[1], args[2], args[3]),
  'wait-claim': () => waitClaim(args[0], args[1], args[2], args[3]),
};
if (!commands[command]) fail(`unknown command ${command ?? '(none)'}`);
await commands[command]().catch((err) => fail(err instanceof Error ? err.message : String(err)));
