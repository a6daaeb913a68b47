import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, manualClock, type TestApp } from '../../helpers/app.js';
import { ownDatabase } from '../../helpers/callbacks.js';
import { DATABASES } from '../../helpers/databases.js';
import { createAgent, createUser } from '../../helpers/factories.js';
import { a2aRpc, userMessage } from './a2a-rpc.js';

const HOUR = 3_600_000;

describe.each(DATABASES)('A2A messageIds on $name', (shared) => {
  const clock = manualClock(Date.parse('2026-03-01T00:00:00.000Z'));
  let t: TestApp;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    // Housekeeping deletes across the whole database: storage of its own keeps other files' rows safe.
    const own = await ownDatabase(shared);
    drop = own.drop;
    t = await buildTestApp(own.database, { clock, config: { housekeepingIntervalMs: 3_600_000 } });
  });
  afterAll(async () => {
    await t.close();
    await drop();
  });

  it('remembers a messageId for 24 hours, then housekeeping forgets it and it makes a new task', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const a = a2aRpc(t, user, agent);
    const message = userMessage('once');
    const send = async () =>
      (await a.rpc('SendMessage', { message, configuration: { returnImmediately: true } })).result.task;
    const first = await send();
    expect((await send()).id).toBe(first.id);
    const other = await a.rpc('SendMessage', {
      message: userMessage('other'),
      configuration: { returnImmediately: true },
    });

    clock.advance(23 * HOUR);
    expect((await send()).id).toBe(first.id);
    expect((await t.app.background.housekeep()).a2aMessageIds).toBe(0);

    clock.advance(2 * HOUR);
    const result = await t.app.background.housekeep();
    expect(result).toMatchObject({ a2aMessageIds: 2, ran: true });
    const again = await send();
    expect(again.id).not.toBe(first.id);
    // The first task keeps its history's messageId after the dedup record is gone.
    const old = (await a.rpc('GetTask', { id: first.id })).result;
    expect(old.history[0].messageId).toBe(message.messageId);
    expect(other.result.task.id).not.toBe(first.id);
  });

  it('takes an expired record over before housekeeping has run', async () => {
    const user = await createUser(t);
    const agent = (await createAgent(t, user)).uuid;
    const a = a2aRpc(t, user, agent);
    const message = userMessage('again');
    const send = async () =>
      (await a.rpc('SendMessage', { message, configuration: { returnImmediately: true } })).result.task;
    const first = await send();
    clock.advance(25 * HOUR);
    const second = await send();
    expect(second.id).not.toBe(first.id);
    expect((await send()).id).toBe(second.id);
  });
});
