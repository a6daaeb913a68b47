import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

/**
 * How far below the event loop the hashing threads run (Linux `nice`, per thread). A login flood
 * keeps every hashing thread busy; at the loop's own priority they took two thirds of a 2-core
 * machine's CPU from it, and every request waiting on the loop (a submit) waited that much longer.
 * At +10 the scheduler gives a runnable loop about ten times their weight: hashing still uses every
 * idle cycle, but no longer the loop's.
 */
export const HASHING_NICE = 10;

/** One argon2 call, run in a hashing thread. */
type Job =
  | { op: 'hash'; password: string; options: Record<string, number> }
  | { op: 'verify'; stored: string; password: string };

interface Pending {
  job: Job;
  resolve(value: string | boolean): void;
  reject(err: Error): void;
}

// The thread's whole program: lower its own priority, then answer argon2 calls one at a time.
// (Kept as source so it runs the same from `src` under the test runner and from `dist`.)
const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const argon2 = require(workerData.argon2);
try { require('node:os').setPriority(workerData.nice); } catch {}
parentPort.on('message', (job) => {
  try {
    const value = job.op === 'hash'
      ? argon2.hashSync(job.password, job.options)
      : argon2.verifySync(job.stored, job.password);
    parentPort.postMessage({ ok: true, value });
  } catch (err) {
    parentPort.postMessage({ ok: false, message: err instanceof Error ? err.message : String(err) });
  }
});`;

/**
 * argon2 in a few dedicated threads at a lower CPU priority than the event loop. Threads start on
 * the first call (a server that never checks a password never pays for them), hold the process
 * open only while they work, and one that dies is replaced on the next call.
 */
export function createArgon2Threads(threads = availableParallelism()) {
  const argon2Path = createRequire(import.meta.url).resolve('@node-rs/argon2');
  const live = new Set<Worker>();
  let idle: Worker[] = [];
  const queue: Pending[] = [];

  function spawn(): Worker {
    const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { argon2: argon2Path, nice: HASHING_NICE } });
    worker.unref();
    live.add(worker);
    worker.once('exit', () => {
      live.delete(worker);
      idle = idle.filter((w) => w !== worker);
      drain();
    });
    return worker;
  }

  function run(worker: Worker, pending: Pending) {
    worker.ref();
    const done = () => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const onMessage = (answer: { ok: boolean; value?: string | boolean; message?: string }) => {
      done();
      worker.unref();
      if (answer.ok) pending.resolve(answer.value as string | boolean);
      else pending.reject(new Error(answer.message));
      next(worker);
    };
    const onError = (err: Error) => {
      done();
      pending.reject(err);
      void worker.terminate();
    };
    const onExit = () => onError(new Error('argon2 thread exited'));
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    worker.postMessage(pending.job);
  }

  function next(worker: Worker) {
    const pending = queue.shift();
    if (pending) run(worker, pending);
    else idle.push(worker);
  }

  function drain() {
    while (queue.length > 0) {
      const worker = idle.pop() ?? (live.size < threads ? spawn() : undefined);
      if (!worker) return;
      run(worker, queue.shift() as Pending);
    }
  }

  function call(job: Job): Promise<string | boolean> {
    return new Promise((resolve, reject) => {
      queue.push({ job, resolve, reject });
      drain();
    });
  }

  return {
    hash: (password: string, options: Record<string, number>) =>
      call({ op: 'hash', password, options }) as Promise<string>,
    verify: (stored: string, password: string) => call({ op: 'verify', stored, password }) as Promise<boolean>,
    /** Threads running now (for tests). */
    threads: () => live.size,
  };
}
