import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createArgon2Threads, HASHING_NICE } from '../../src/lib/argon2-threads.js';

const OPTIONS = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 };

/** The nice value of each thread of this process (Linux keeps one per thread). */
function niceOfThreads(): number[] {
  return readdirSync('/proc/self/task').map((tid) => {
    const fields = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return Number(fields[16]);
  });
}

describe('argon2 in hashing threads', () => {
  it('hashes and verifies, and a wrong password or a malformed hash is not accepted', async () => {
    const threads = createArgon2Threads(2);
    const stored = await threads.hash('correct horse', OPTIONS);
    expect(stored).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(await threads.verify(stored, 'correct horse')).toBe(true);
    expect(await threads.verify(stored, 'wrong horse')).toBe(false);
    await expect(threads.verify('not a hash', 'x')).rejects.toThrow();
    // The thread that answered the malformed hash still serves the next call.
    expect(await threads.verify(stored, 'correct horse')).toBe(true);
  });

  it('starts no more threads than its bound, each below the event loop in priority', async () => {
    const before = niceOfThreads().filter((n) => n === HASHING_NICE).length;
    const threads = createArgon2Threads(2);
    expect(threads.threads()).toBe(0);
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => threads.hash(`p${i}`, OPTIONS)));
    expect(new Set(results).size).toBe(5);
    expect(threads.threads()).toBe(2);
    if (process.platform === 'linux') {
      expect(niceOfThreads().filter((n) => n === HASHING_NICE).length - before).toBe(2);
      // The test's own thread (the event loop) keeps its priority.
      expect(Number(readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ')[16])).toBe(0);
    }
  });
});
