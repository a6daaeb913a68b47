import { describe, expect, it } from 'vitest';
import { ANNOUNCED_STATUSES, classify } from '../../../src/modules/callbacks/callbacks-fns.js';

describe('classify', () => {
  const cases: Array<[number | null, ReturnType<typeof classify>]> = [
    [200, 'delivered'],
    [201, 'delivered'],
    [204, 'delivered'],
    [299, 'delivered'],
    [410, 'gone'],
    [null, 'retry'],
    [100, 'retry'],
    [199, 'retry'],
    [300, 'retry'],
    [301, 'retry'],
    [302, 'retry'],
    [304, 'retry'],
    [400, 'retry'],
    [404, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [503, 'retry'],
  ];
  it.each(cases)('%j → %s', (status, expected) => {
    expect(classify(status)).toBe(expected);
  });
});

describe('ANNOUNCED_STATUSES', () => {
  it('announces exactly awaiting_input, completed, failed and cancelled', () => {
    expect([...ANNOUNCED_STATUSES].sort()).toEqual(['awaiting_input', 'cancelled', 'completed', 'failed']);
  });
});
