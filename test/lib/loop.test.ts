import { describe, expect, it } from 'vitest';
import { createLoop } from '../../src/lib/loop.js';
import { manualTimers } from '../helpers/app.js';

/** A pass the test finishes by hand, so it can act while one is running. */
function controlledRun() {
  const finishers: Array<(err?: Error) => void> = [];
  return {
    started: () => finishers.length,
    run: () =>
      new Promise<void>((resolve, reject) => {
        finishers.push((err) => (err ? reject(err) : resolve()));
      }),
    finish: async (err?: Error) => {
      finishers.at(-1)?.(err);
      // Let the loop see the end of the pass.
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

function loopWith(opts: { immediate?: boolean } = {}) {
  const timers = manualTimers();
  const pass = controlledRun();
  const warnings: string[] = [];
  const log = { warn: (_obj: object, msg: string) => void warnings.push(msg) };
  const loop = createLoop({ name: 'test loop', intervalMs: 1000, run: pass.run, log, timers, ...opts });
  return { loop, timers, pass, warnings };
}

describe('createLoop', () => {
  it('runs a pass per interval once started, none before, none after stop', async () => {
    const { loop, timers, pass } = loopWith();
    timers.advance(5000);
    expect(pass.started()).toBe(0);
    loop.start();
    timers.advance(999);
    expect(pass.started()).toBe(0);
    timers.advance(1);
    expect(pass.started()).toBe(1);
    await pass.finish();
    timers.advance(1000);
    expect(pass.started()).toBe(2);
    const stopped = loop.stop();
    await pass.finish();
    await stopped;
    expect(timers.count).toBe(0);
    timers.advance(5000);
    loop.nudge();
    expect(pass.started()).toBe(2);
  });

  it('runs the first pass at start when immediate', () => {
    const { loop, pass } = loopWith({ immediate: true });
    loop.start();
    expect(pass.started()).toBe(1);
  });

  it('drops a tick that finds a pass running, but a nudge then asks for one more pass right after', async () => {
    const { loop, timers, pass } = loopWith();
    loop.start();
    timers.advance(1000);
    timers.advance(1000);
    await pass.finish();
    expect(pass.started()).toBe(1);
    timers.advance(1000);
    loop.nudge();
    loop.nudge();
    expect(pass.started()).toBe(2);
    await pass.finish();
    expect(pass.started()).toBe(3);
    await pass.finish();
    expect(pass.started()).toBe(3);
    await loop.stop();
  });

  it('logs a failed pass under its name and goes on at the next tick', async () => {
    const { loop, timers, pass, warnings } = loopWith();
    loop.start();
    timers.advance(1000);
    await pass.finish(new Error('boom'));
    expect(warnings).toEqual(['test loop failed; trying again at the next tick']);
    timers.advance(1000);
    expect(pass.started()).toBe(2);
    await pass.finish();
    await loop.stop();
  });

  it('stop waits for the pass in flight', async () => {
    const { loop, timers, pass } = loopWith();
    loop.start();
    timers.advance(1000);
    let done = false;
    const stopping = loop.stop().then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(false);
    await pass.finish();
    await stopping;
    expect(done).toBe(true);
  });
});
