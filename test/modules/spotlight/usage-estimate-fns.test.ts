import { describe, expect, it } from 'vitest';
import {
  codePoints,
  estimatedTokens,
  generatedChars,
  promptChars,
} from '../../../src/modules/spotlight/proxy/usage-estimate-fns.js';

describe('usage estimate rules', () => {
  it('counts Unicode code points, not UTF-16 units or bytes', () => {
    expect(codePoints('')).toBe(0);
    expect(codePoints('abc')).toBe(3);
    expect(codePoints('😀')).toBe(1);
    expect(codePoints('a😀b😀')).toBe(4);
    expect(codePoints('é')).toBe(1);
    // A lone surrogate is one code point too.
    expect(codePoints('\ud800x')).toBe(2);
    expect(codePoints('x\udc00')).toBe(2);
    expect(codePoints('\ud800')).toBe(1);
  });

  it('counts the string contents and text parts of messages, nothing else', () => {
    expect(
      promptChars([
        { role: 'system', name: 'someone', content: 'abcd' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'ef' },
            { type: 'image_url', image_url: { url: 'xxxx' } },
          ],
        },
        { role: 'assistant', content: null, tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }] },
        { role: 'tool', content: [{ type: 'text', text: 42 }, 'loose', null] },
        'not a message',
      ]),
    ).toBe(6);
    expect(promptChars('nope')).toBe(0);
    expect(promptChars([{ role: 'user', content: 'x'.repeat(401) }])).toBe(401);
  });

  it('counts content, refusal and tool-call arguments of messages or deltas', () => {
    const completion = {
      choices: [
        { message: { content: 'Hello', refusal: null } },
        {
          message: {
            content: null,
            refusal: 'no',
            tool_calls: [{ function: { name: 'not-counted', arguments: '{}' } }, { function: {} }],
          },
        },
      ],
    };
    expect(generatedChars(completion, 'message')).toBe(9);
    expect(generatedChars(completion, 'delta')).toBe(0);
    expect(generatedChars({ choices: [{ delta: { content: ', ' } }] }, 'delta')).toBe(2);
    expect(
      generatedChars({ choices: [{ delta: { tool_calls: [{ function: { arguments: '{"q' } }] } }] }, 'delta'),
    ).toBe(3);
    expect(generatedChars({ choices: [], usage: {} }, 'delta')).toBe(0);
    expect(generatedChars(null, 'message')).toBe(0);
  });

  it('rounds a quarter of the characters up', () => {
    expect([0, 1, 4, 5, 12, 401].map(estimatedTokens)).toEqual([0, 1, 1, 2, 3, 101]);
  });
});
