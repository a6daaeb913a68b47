import { describe, expect, it } from 'vitest';
import { createEventHub } from '../../src/lib/event-hub.js';

describe('the event hub', () => {
  it('tells the listeners of one name in the order they subscribed, awaiting each', async () => {
    const hub = createEventHub();
    const heard: string[] = [];
    hub.on('agent:deleting', async ({ agentUuid }) => {
      await new Promise((resolve) => setImmediate(resolve));
      heard.push(`first ${agentUuid}`);
    });
    hub.on('agent:deleting', ({ agentUuid }) => {
      heard.push(`second ${agentUuid}`);
    });
    hub.on('task:changed', () => {
      heard.push('another name');
    });
    await hub.emit('agent:deleting', { agentUuid: 'a1' });
    expect(heard).toEqual(['first a1', 'second a1']);
  });

  it('an event nobody listens to resolves at once', async () => {
    await expect(createEventHub().emit('agent:deleting', { agentUuid: 'x' })).resolves.toBeUndefined();
  });

  it('a listener that throws makes emit throw, and the listeners after it are not called', async () => {
    const hub = createEventHub();
    const heard: string[] = [];
    hub.on('agent:deleting', () => {
      throw new Error('refused');
    });
    hub.on('agent:deleting', () => {
      heard.push('after');
    });
    await expect(hub.emit('agent:deleting', { agentUuid: 'a1' })).rejects.toThrow('refused');
    expect(heard).toEqual([]);
  });
});
