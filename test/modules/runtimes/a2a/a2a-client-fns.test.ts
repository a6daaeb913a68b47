import { type Artifact, type Message, type Part, Role, type StreamResponse, TaskState } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import {
  applyStreamEvent,
  CardError,
  deliveryFailed,
  endpointOfCard,
  isAnsweredQuestion,
  outcomeOfMessage,
  outcomeOfTask,
  planOf,
  questionOf,
  type RemoteTaskState,
  remoteOf,
  replyOf,
  resultOfTask,
  sendRequestOf,
} from '../../../../src/modules/runtimes/a2a/a2a-client-fns.js';
import { findingsResultOf } from '../../../../src/modules/runtimes/findings-fns.js';

const text = (value: string): Part => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});
const data = (value: unknown): Part => ({
  content: { $case: 'data', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});
const url = (value: string): Part => ({
  content: { $case: 'url', value },
  metadata: undefined,
  filename: '',
  mediaType: '',
});
const artifact = (artifactId: string, parts: Part[]): Artifact => ({
  artifactId,
  name: '',
  description: '',
  parts,
  metadata: undefined,
  extensions: [],
});
const message = (...parts: Part[]): Message => ({
  messageId: 'm',
  contextId: 'c',
  taskId: 't',
  role: Role.ROLE_AGENT,
  parts,
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});
const taskIn = (state: TaskState, said?: Part[], artifacts: Artifact[] = []) => ({
  status: { state, message: said ? message(...said) : undefined, timestamp: undefined },
  artifacts,
});
const finding = { file: 'a.ts', line: 3, severity: 'high', message: 'bug' };
const at = '2026-11-22T10:00:00.000Z';
const user = (content: string) => ({ role: 'user' as const, content, created_at: at });
const agent = (content: string) => ({ role: 'agent' as const, content, created_at: at });

describe('the endpoint of a card', () => {
  const iface = (protocolBinding: string, protocolVersion = '1.0', u = `https://a.example/${protocolBinding}`) => ({
    url: u,
    protocolBinding,
    protocolVersion,
  });

  it('is the first JSONRPC or HTTP+JSON interface of version 1.0, skipping others', () => {
    const card = {
      supportedInterfaces: [iface('GRPC'), iface('JSONRPC', '0.3'), iface('HTTP+JSON'), iface('JSONRPC')],
      capabilities: { streaming: true },
    };
    expect(endpointOfCard(card)).toEqual({
      url: 'https://a.example/HTTP+JSON',
      binding: 'HTTP+JSON',
      tenant: '',
      streaming: true,
    });
  });

  it('keeps the tenant; streaming only when the card says true', () => {
    const card = { supportedInterfaces: [{ ...iface('JSONRPC'), tenant: 't1' }], capabilities: { streaming: 'yes' } };
    expect(endpointOfCard(card)).toEqual({
      url: 'https://a.example/JSONRPC',
      binding: 'JSONRPC',
      tenant: 't1',
      streaming: false,
    });
  });

  it.each([
    ['not an object', 'card'],
    ['null', null],
    ['an array', []],
    ['no interfaces', {}],
    ['interfaces not a list', { supportedInterfaces: 'JSONRPC' }],
    ['only gRPC', { supportedInterfaces: [iface('GRPC')] }],
    ['only v0.3', { supportedInterfaces: [iface('JSONRPC', '0.3'), iface('HTTP+JSON', '1.1')] }],
    ['a usable binding without URL', { supportedInterfaces: [{ protocolBinding: 'JSONRPC', protocolVersion: '1.0' }] }],
    ['lower-case binding', { supportedInterfaces: [iface('jsonrpc')] }],
  ])('refuses a card with %s', (_name, card) => {
    expect(() => endpointOfCard(card)).toThrow(CardError);
  });
});

describe('the state a run keeps', () => {
  const remote: RemoteTaskState = {
    taskId: 't',
    contextId: 'c',
    url: 'https://a.example/rpc',
    binding: 'JSONRPC',
    tenant: '',
    streaming: false,
    attempt: 1,
    phase: 'awaiting_input',
  };

  it('is read back as saved, and anything else is no remote task', () => {
    expect(remoteOf({ ...remote })).toEqual(remote);
    expect(remoteOf(null)).toBeNull();
    expect(remoteOf({})).toBeNull();
    expect(remoteOf({ ...remote, phase: 'done' })).toBeNull();
    expect(remoteOf({ ...remote, binding: 'GRPC' })).toBeNull();
    expect(remoteOf({ ...remote, attempt: '1' })).toBeNull();
    expect(remoteOf({ ...remote, taskId: undefined })).toBeNull();
    const asked = { messageId: 'm', timestamp: at, text: 'Which branch?' };
    expect(remoteOf({ ...remote, asked })).toEqual({ ...remote, asked });
    expect(remoteOf({ ...remote, asked: { messageId: 1 } })).toEqual(remote);
  });

  it('a status is the question already answered only while interrupted with the same message', () => {
    const status = (state: TaskState, messageId: string, said: string, timestamp = at) => ({
      state,
      message: { ...message(text(said)), messageId },
      timestamp,
    });
    const input = TaskState.TASK_STATE_INPUT_REQUIRED;
    const asked = questionOf(status(input, 'm1', 'Which branch?'));
    expect(asked).toEqual({ messageId: 'm1', timestamp: at, text: 'Which branch?' });
    const cases: Array<[ReturnType<typeof status> | undefined, boolean]> = [
      [status(input, 'm1', 'Which branch?'), true],
      [status(TaskState.TASK_STATE_AUTH_REQUIRED, 'm1', 'Which branch?'), true],
      [status(input, 'm1', 'Which branch?', '2026-11-22T10:00:01.000Z'), true],
      [status(input, 'm2', 'Which branch?'), false],
      [status(input, '', 'Which branch?'), false],
      [status(TaskState.TASK_STATE_WORKING, 'm1', 'Which branch?'), false],
      [status(TaskState.TASK_STATE_COMPLETED, 'm1', 'Which branch?'), false],
      [undefined, false],
    ];
    for (const [now, answered] of cases) expect(isAnsweredQuestion(now, asked)).toBe(answered);
    expect(isAnsweredQuestion(status(input, 'm1', 'Which branch?'), undefined)).toBe(false);
    // Without message ids, the same time and text are the same question.
    const bare = questionOf(status(input, '', 'Which branch?'));
    expect(isAnsweredQuestion(status(input, '', 'Which branch?'), bare)).toBe(true);
    expect(isAnsweredQuestion(status(input, '', 'Which tag?'), bare)).toBe(false);
    expect(isAnsweredQuestion(status(input, '', 'Which branch?', '2026-11-22T10:00:01.000Z'), bare)).toBe(false);
  });

  it('the reply is what the user said after the last agent message, several joined by a newline', () => {
    expect(replyOf([user('review'), agent('which branch?'), user('main')])).toBe('main');
    expect(replyOf([user('review'), agent('which?'), user('main'), user('and be quick')])).toBe('main\nand be quick');
    expect(replyOf([user('review'), agent('which?'), user('a'), agent('sure?'), user('yes')])).toBe('yes');
    expect(replyOf([user('review'), agent('which?')])).toBe('');
    expect(replyOf([user('a'), user('b')])).toBe('a\nb');
  });

  it('plans a reply to the remote task that asked, in the same attempt, when the user answered', () => {
    const conversation = [user('review'), agent('which?'), user('main')];
    expect(planOf(remote, 1, conversation)).toEqual({ kind: 'reply', text: 'main' });
    expect(planOf(remote, 2, conversation)).toEqual({ kind: 'new' });
    expect(planOf(remote, 1, [user('review'), agent('which?')])).toEqual({ kind: 'new' });
    expect(planOf(null, 1, conversation)).toEqual({ kind: 'new' });
  });

  it('resumes following a remote task of the same attempt, and starts anew on a later attempt', () => {
    const following = { ...remote, phase: 'following' as const };
    expect(planOf(following, 1, [user('review')])).toEqual({ kind: 'resume' });
    expect(planOf(following, 2, [user('review')])).toEqual({ kind: 'new' });
  });
});

describe('the SendMessage request', () => {
  it('for a new remote task: one text part per message, no task or context, answered at once', () => {
    const request = sendRequestOf(['review', 'main'], null, '');
    expect(request.message?.role).toBe(Role.ROLE_USER);
    expect(request.message?.parts).toEqual([text('review'), text('main')]);
    expect(request.message?.taskId).toBe('');
    expect(request.message?.contextId).toBe('');
    expect(request.message?.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(request.configuration?.returnImmediately).toBe(true);
    expect(sendRequestOf(['x'], null, '').message?.messageId).not.toBe(request.message?.messageId);
  });

  it('for a reply: the remote task and context, and the tenant', () => {
    const request = sendRequestOf(['main'], { taskId: 't', contextId: 'c', tenant: 'x' }, 'x');
    expect(request).toMatchObject({ tenant: 'x', message: { taskId: 't', contextId: 'c', parts: [text('main')] } });
  });
});

describe('the result of a completed remote task', () => {
  it('is the first data part of the findings shape, other keys dropped', () => {
    const wanted = { summary: 's', findings: [{ ...finding, extra: 1 }], other: true };
    const task = taskIn(
      TaskState.TASK_STATE_COMPLETED,
      [text('said')],
      [
        artifact('a', [text('words'), data({ summary: 1 }), data(wanted)]),
        artifact('b', [data({ summary: 'later', findings: [] })]),
      ],
    );
    expect(resultOfTask(task)).toEqual({ summary: 's', findings: [finding] });
  });

  it('else all text parts of all artifacts joined by a newline', () => {
    const task = taskIn(
      TaskState.TASK_STATE_COMPLETED,
      [text('said')],
      [
        artifact('a', [text('one'), url('https://x'), text('two')]),
        artifact('b', [data({ summary: 's', findings: [{ file: 'a' }] }), text('three')]),
      ],
    );
    expect(resultOfTask(task)).toEqual({ summary: 'one\ntwo\nthree', findings: [] });
  });

  it('else the text of the status message, else empty', () => {
    expect(
      resultOfTask(taskIn(TaskState.TASK_STATE_COMPLETED, [text('a'), text('b')], [artifact('a', [url('u')])])),
    ).toEqual({
      summary: 'a\nb',
      findings: [],
    });
    expect(resultOfTask(taskIn(TaskState.TASK_STATE_COMPLETED))).toEqual({ summary: '', findings: [] });
  });

  it.each([
    [null],
    ['text'],
    [[]],
    [{ summary: 's' }],
    [{ summary: 's', findings: {} }],
    [{ summary: 2, findings: [] }],
    [{ summary: 's', findings: [{ ...finding, line: '3' }] }],
    [{ summary: 's', findings: [null] }],
  ])('%j is not of the findings shape', (value) => {
    expect(findingsResultOf(value)).toBeNull();
  });

  it('a Message answer completes with its text parts', () => {
    expect(outcomeOfMessage(message(text('a'), data({ x: 1 }), text('b')))).toEqual({
      kind: 'completed',
      result: { summary: 'a\nb', findings: [] },
    });
  });
});

describe('the outcome of a remote task state', () => {
  const said = [text('first'), text('second')];
  const failed = (code: string, msg: string) => ({
    kind: 'failed',
    code,
    message: msg,
    retryable: false,
    retryAfterMs: null,
  });
  it.each([
    [TaskState.TASK_STATE_UNSPECIFIED, said, null],
    [TaskState.TASK_STATE_SUBMITTED, said, null],
    [TaskState.TASK_STATE_WORKING, said, null],
    [TaskState.TASK_STATE_INPUT_REQUIRED, said, { kind: 'input_request', message: 'first\nsecond' }],
    [TaskState.TASK_STATE_INPUT_REQUIRED, undefined, { kind: 'input_request', message: 'input required' }],
    [TaskState.TASK_STATE_AUTH_REQUIRED, said, { kind: 'input_request', message: 'first\nsecond' }],
    [TaskState.TASK_STATE_AUTH_REQUIRED, [url('u')], { kind: 'input_request', message: 'input required' }],
    [TaskState.TASK_STATE_COMPLETED, said, { kind: 'completed', result: { summary: 'first\nsecond', findings: [] } }],
    [TaskState.TASK_STATE_FAILED, said, failed('AGENT_ERROR', 'first\nsecond')],
    [TaskState.TASK_STATE_FAILED, undefined, failed('AGENT_ERROR', 'The remote agent failed the task')],
    [TaskState.TASK_STATE_REJECTED, said, failed('AGENT_REJECTED', 'first\nsecond')],
    [TaskState.TASK_STATE_REJECTED, undefined, failed('AGENT_REJECTED', 'The remote agent rejected the task')],
    [TaskState.TASK_STATE_CANCELED, said, { kind: 'cancelled', message: 'first\nsecond' }],
    [TaskState.TASK_STATE_CANCELED, undefined, { kind: 'cancelled', message: 'The remote agent cancelled the task' }],
    [
      TaskState.UNRECOGNIZED,
      said,
      failed('INVALID_AGENT_RESPONSE', 'The remote task is in a state A2A 1.0 does not define'),
    ],
  ])('state %s (message %j) → %j', (state, parts, expected) => {
    expect(outcomeOfTask(taskIn(state, parts))).toEqual(expected);
  });

  it('a task without status is still under way', () => {
    expect(outcomeOfTask({ status: undefined, artifacts: [] })).toBeNull();
  });

  it('delivery failures are retryable, keep Retry-After and are bounded in length', () => {
    const outcome = deliveryFailed('x'.repeat(5000), 2000);
    expect(outcome).toMatchObject({ kind: 'failed', code: 'DELIVERY_FAILED', retryable: true, retryAfterMs: 2000 });
    expect((outcome as { message: string }).message).toHaveLength(1000);
  });
});

describe('a task as a stream shows it', () => {
  const status = (state: TaskState) => ({ state, message: undefined, timestamp: undefined });
  const ev = (payload: StreamResponse['payload']): StreamResponse => ({ payload });

  it('starts from a task event, takes status updates, adds, replaces and appends artifacts', () => {
    let view = applyStreamEvent(
      null,
      ev({
        $case: 'task',
        value: {
          id: 't',
          contextId: 'c',
          status: status(TaskState.TASK_STATE_SUBMITTED),
          artifacts: [],
          history: [],
          metadata: undefined,
        },
      }),
    );
    view = applyStreamEvent(
      view,
      ev({
        $case: 'statusUpdate',
        value: { taskId: 't', contextId: 'c', status: status(TaskState.TASK_STATE_WORKING), metadata: undefined },
      }),
    );
    const update = (a: Artifact, append: boolean) =>
      ev({
        $case: 'artifactUpdate',
        value: { taskId: 't', contextId: 'c', artifact: a, append, lastChunk: false, metadata: undefined },
      });
    view = applyStreamEvent(view, update(artifact('a', [text('one')]), false));
    view = applyStreamEvent(view, update(artifact('a', [text('two')]), true));
    view = applyStreamEvent(view, update(artifact('b', [text('x')]), false));
    view = applyStreamEvent(view, update(artifact('b', [text('y')]), false));
    view = applyStreamEvent(view, ev({ $case: 'message', value: message(text('ignored')) }));
    view = applyStreamEvent(view, ev(undefined));
    expect(view?.id).toBe('t');
    expect(view?.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(
      view?.artifacts.map((a) => [a.artifactId, a.parts.map((p) => (p.content as { value: string }).value)]),
    ).toEqual([
      ['a', ['one', 'two']],
      ['b', ['y']],
    ]);
  });

  it('learns the task from a status update when no task event came first', () => {
    const view = applyStreamEvent(
      null,
      ev({
        $case: 'statusUpdate',
        value: { taskId: 't', contextId: 'c', status: status(TaskState.TASK_STATE_COMPLETED), metadata: undefined },
      }),
    );
    expect(view).toMatchObject({ id: 't', contextId: 'c', artifacts: [] });
    expect(applyStreamEvent(null, ev({ $case: 'message', value: message() }))).toBeNull();
  });
});
