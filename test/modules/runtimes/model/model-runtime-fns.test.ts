import { describe, expect, it } from 'vitest';
import {
  chatRequestOf,
  isRetryableStatus,
  outcomeOfAnswer,
  REQUEST_INPUT_TOOL,
  resultOf,
} from '../../../../src/modules/runtimes/model/model-runtime-fns.js';

const runtime = { type: 'openai' as const, provider_credential_uuid: 'c', model: 'gpt-4o' };
const finding = { file: 'a.ts', line: 1, severity: 'low', message: 'm' };

describe('the request of a run', () => {
  it('is exactly model and messages without optional settings', () => {
    expect(chatRequestOf(runtime, [{ role: 'user', content: 'q' }])).toEqual({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'q' }],
    });
  });

  it('adds the system prompt, the conversation as user/assistant turns, and the settings', () => {
    const full = {
      ...runtime,
      system_prompt: 'Be brief',
      temperature: 0,
      max_output_tokens: 50,
      allow_input_requests: true,
    };
    const conversation = [
      { role: 'user' as const, content: 'review' },
      { role: 'agent' as const, content: 'which branch?' },
      { role: 'user' as const, content: 'main' },
    ];
    expect(chatRequestOf(full, conversation)).toEqual({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be brief' },
        { role: 'user', content: 'review' },
        { role: 'assistant', content: 'which branch?' },
        { role: 'user', content: 'main' },
      ],
      temperature: 0,
      max_completion_tokens: 50,
      tools: [REQUEST_INPUT_TOOL],
    });
  });
});

describe('reading the answer', () => {
  it.each([
    ['plain text', 'All good', { summary: 'All good', findings: [] }],
    [
      'a JSON review',
      JSON.stringify({ summary: 's', findings: [finding], x: 1 }),
      { summary: 's', findings: [finding] },
    ],
    [
      'a fenced review',
      `\`\`\`json\n${JSON.stringify({ summary: 's', findings: [] })}\n\`\`\``,
      { summary: 's', findings: [] },
    ],
    [
      'a plain fence',
      `  \`\`\`\n${JSON.stringify({ summary: 's', findings: [] })}\n\`\`\`  `,
      { summary: 's', findings: [] },
    ],
    ['findings of the wrong shape', JSON.stringify({ summary: 's', findings: [{ file: 'a', line: '1' }] }), null],
    ['no summary', JSON.stringify({ findings: [] }), null],
    ['a JSON array', '[]', null],
  ])('%s', (_name, content, expected) => {
    expect(resultOf(content)).toEqual(expected ?? { summary: content, findings: [] });
  });

  it('completes, asks for input only when allowed, and refuses what is not a chat completion', () => {
    const answer = (message: unknown) => ({ choices: [{ message }] });
    expect(outcomeOfAnswer(answer({ content: null }), false)).toEqual({
      kind: 'completed',
      result: { summary: '', findings: [] },
    });
    const ask = answer({
      content: null,
      tool_calls: [{ function: { name: 'request_input', arguments: '{"message":"Which?"}' } }],
    });
    expect(outcomeOfAnswer(ask, true)).toEqual({ kind: 'input_request', message: 'Which?' });
    expect(outcomeOfAnswer(ask, false).kind).toBe('completed');
    const empty = answer({
      content: 'x',
      tool_calls: [{ function: { name: 'request_input', arguments: '{"message":" "}' } }],
    });
    expect(outcomeOfAnswer(empty, true)).toEqual({ kind: 'completed', result: { summary: 'x', findings: [] } });
    for (const bad of [null, {}, { choices: [] }, { choices: [{}] }, 'text']) {
      expect(outcomeOfAnswer(bad, true)).toMatchObject({ kind: 'failed', retryable: false });
    }
  });
});

describe('failures', () => {
  it('retries 408, 409, 429 and 5xx only', () => {
    expect([400, 401, 403, 404, 408, 409, 422, 429, 500, 502, 503, 504].filter(isRetryableStatus)).toEqual([
      408, 409, 429, 500, 502, 503, 504,
    ]);
  });
});
