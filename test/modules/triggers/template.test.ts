import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_CHARS } from '../../../src/modules/tasks/tasks-schemas.js';
import {
  lookup,
  parseTemplate,
  type Rendered,
  renderTemplate,
  type TemplatePart,
} from '../../../src/modules/triggers/triggers-template-fns.js';

/** Parses (failing the test on a parse error) and renders. */
function render(template: string, payload: unknown, maxLength?: number): Rendered {
  const parsed = parseTemplate(template);
  if (!parsed.ok) throw new Error(`unexpected parse error in ${JSON.stringify(template)}: ${parsed.error.reason}`);
  return renderTemplate(parsed.parts, payload, maxLength);
}

interface RenderCase {
  name: string;
  template: string;
  payload: unknown;
  text: string;
  missing?: string[];
}

const ORDER = {
  id: 7,
  items: [{ name: 'tea', tags: ['hot'] }, { name: 'cake' }],
  matrix: [
    [1, 2],
    [3, [4, 5]],
  ],
};

/** docs/api.md §7.2, rule by rule: the expected texts are written out, not computed. */
const RENDER_CASES: RenderCase[] = [
  { name: 'plain text', template: 'no placeholders here', payload: {}, text: 'no placeholders here' },
  { name: 'one string', template: 'Hello {{payload.name}}!', payload: { name: 'Ada' }, text: 'Hello Ada!' },
  { name: 'spaces inside the braces', template: '{{ payload.name }}', payload: { name: 'Ada' }, text: 'Ada' },
  { name: 'uneven spaces', template: '{{payload.name   }}|{{   payload.name}}', payload: { name: 'A' }, text: 'A|A' },
  { name: 'nested objects', template: '{{payload.a.b.c}}', payload: { a: { b: { c: 'deep' } } }, text: 'deep' },
  { name: 'array index', template: '{{payload.items.0.name}}', payload: ORDER, text: 'tea' },
  { name: 'second item', template: '{{payload.items.1.name}}', payload: ORDER, text: 'cake' },
  { name: 'array inside an item', template: '{{payload.items.0.tags.0}}', payload: ORDER, text: 'hot' },
  { name: 'nested arrays', template: '{{payload.matrix.1.1.0}}', payload: ORDER, text: '4' },
  { name: 'an array of arrays as JSON', template: '{{payload.matrix}}', payload: ORDER, text: '[[1,2],[3,[4,5]]]' },
  { name: 'a top-level array payload', template: '{{payload.1}}', payload: ['a', 'b'], text: 'b' },
  {
    name: 'the whole payload as compact JSON',
    template: 'got {{payload}}',
    payload: { a: 1, b: [true, null, 'x'], c: { d: 'e f' } },
    text: 'got {"a":1,"b":[true,null,"x"],"c":{"d":"e f"}}',
  },
  { name: 'the whole payload when it is a string', template: '<{{payload}}>', payload: 'hi "you"', text: '<hi "you">' },
  { name: 'the whole payload when it is a number', template: '{{ payload }}', payload: 42, text: '42' },
  {
    name: 'strings as they are, quotes and newlines unescaped',
    template: '[{{payload.s}}]',
    payload: { s: 'He said "hi"\n\tand left \\o/ {{payload.s}}' },
    text: '[He said "hi"\n\tand left \\o/ {{payload.s}}]',
  },
  { name: 'an empty string is a value, not missing', template: '[{{payload.s}}]', payload: { s: '' }, text: '[]' },
  { name: 'an integer', template: '{{payload.n}}', payload: { n: 42 }, text: '42' },
  { name: 'zero is a value', template: '{{payload.n}}', payload: { n: 0 }, text: '0' },
  { name: 'a negative decimal', template: '{{payload.n}}', payload: { n: -1.5 }, text: '-1.5' },
  { name: 'a big number as JSON text', template: '{{payload.n}}', payload: { n: 1e21 }, text: '1e+21' },
  { name: 'true', template: '{{payload.b}}', payload: { b: true }, text: 'true' },
  { name: 'false is a value', template: '{{payload.b}}', payload: { b: false }, text: 'false' },
  {
    name: 'an object',
    template: '{{payload.o}}',
    payload: { o: { x: [1, 'two'], y: {} } },
    text: '{"x":[1,"two"],"y":{}}',
  },
  { name: 'an array', template: '{{payload.a}}', payload: { a: [1, 'x', null, []] }, text: '[1,"x",null,[]]' },
  { name: 'an empty array', template: '{{payload.a}}', payload: { a: [] }, text: '[]' },
  {
    name: 'two placeholders side by side',
    template: '{{payload.a}}{{payload.b}}',
    payload: { a: 'x', b: 'y' },
    text: 'xy',
  },
  {
    name: 'several lines',
    template: 'PR #{{payload.number}}\nby {{payload.user.login}}\n',
    payload: { number: 12, user: { login: 'octocat' } },
    text: 'PR #12\nby octocat\n',
  },
  { name: 'a stray }} is text', template: 'a }} b {{payload.x}} }}', payload: { x: 1 }, text: 'a }} b 1 }}' },
  { name: 'single braces are text', template: '{x} { {payload.x} }', payload: { x: 1 }, text: '{x} { {payload.x} }' },
  { name: 'a third closing brace is text', template: '{{payload.x}}}', payload: { x: 1 }, text: '1}' },
  // Missing paths and null.
  { name: 'a missing key', template: '[{{payload.x}}]', payload: {}, text: '[]', missing: ['payload.x'] },
  { name: 'null', template: '[{{payload.x}}]', payload: { x: null }, text: '[]', missing: ['payload.x'] },
  { name: 'a null payload', template: '[{{payload}}]', payload: null, text: '[]', missing: ['payload'] },
  { name: 'below a null', template: '{{payload.x.y}}', payload: { x: null }, text: '', missing: ['payload.x.y'] },
  { name: 'inside a string', template: '{{payload.s.0}}', payload: { s: 'abc' }, text: '', missing: ['payload.s.0'] },
  { name: 'below a number', template: '{{payload.n.x}}', payload: { n: 5 }, text: '', missing: ['payload.n.x'] },
  { name: 'past the end', template: '{{payload.items.2}}', payload: ORDER, text: '', missing: ['payload.items.2'] },
  {
    name: 'a named key of an array',
    template: '{{payload.a.x}}',
    payload: { a: [1] },
    text: '',
    missing: ['payload.a.x'],
  },
  {
    name: 'an array length',
    template: '{{payload.a.length}}',
    payload: { a: [1] },
    missing: ['payload.a.length'],
    text: '',
  },
  { name: 'a negative index', template: '{{payload.a.-1}}', payload: { a: [1] }, text: '', missing: ['payload.a.-1'] },
  {
    name: 'a zero-padded index',
    template: '{{payload.a.01}}',
    payload: { a: [1, 2] },
    text: '',
    missing: ['payload.a.01'],
  },
  {
    name: 'a null array item',
    template: '{{payload.a.0}}',
    payload: { a: [null] },
    text: '',
    missing: ['payload.a.0'],
  },
  {
    name: 'inherited properties are not keys',
    template: '{{payload.constructor}}{{payload.toString}}{{payload.__proto__}}{{payload.s.length}}',
    payload: { s: 'abc' },
    text: '',
    missing: ['payload.constructor', 'payload.toString', 'payload.__proto__', 'payload.s.length'],
  },
  {
    name: 'an own __proto__ key (as JSON.parse makes it) is a key',
    template: '{{payload.__proto__.x}}',
    payload: JSON.parse('{"__proto__": {"x": "own"}}'),
    text: 'own',
  },
  {
    name: 'each missing path once, without spaces, in order of first appearance',
    template: '{{ payload.b }}-{{payload.a.c}}-{{payload.b}}-{{  payload.a.c  }}-{{payload.ok}}-{{payload.z}}',
    payload: { ok: 'y' },
    text: '----y-',
    missing: ['payload.b', 'payload.a.c', 'payload.z'],
  },
  // Unicode and unusual keys: a segment is anything but `.`, `{` and `}`.
  { name: 'unicode text', template: 'Grüße, {{payload.who}} 🎉', payload: { who: '世界 ✓' }, text: 'Grüße, 世界 ✓ 🎉' },
  { name: 'a unicode key', template: '{{payload.名前.姓}}', payload: { 名前: { 姓: '山田' } }, text: '山田' },
  { name: 'an emoji key', template: '{{payload.🔥.🚒}}', payload: { '🔥': { '🚒': 'on it' } }, text: 'on it' },
  { name: 'a key with a space', template: '{{ payload.first name }}', payload: { 'first name': 'Ada' }, text: 'Ada' },
  { name: 'a key with dashes', template: '{{payload.x-request-id}}', payload: { 'x-request-id': 'r1' }, text: 'r1' },
  { name: 'a key with $', template: '{{payload.$ref}}/{{payload.a$b}}', payload: { $ref: 'r', a$b: 's' }, text: 'r/s' },
  {
    name: 'keys with other punctuation',
    template: '{{payload.a:b}} {{payload.@at}} {{payload.[0]}} {{payload.#}} {{payload.a/b}}',
    payload: { 'a:b': 1, '@at': 2, '[0]': 3, '#': 4, 'a/b': 5 },
    text: '1 2 3 4 5',
  },
  {
    name: 'a missing unicode path is listed as written',
    template: '{{payload.ключ.🔑}}',
    payload: {},
    text: '',
    missing: ['payload.ключ.🔑'],
  },
];

interface ParseErrorCase {
  template: string;
  position: number;
  reason: RegExp;
}

const PARSE_ERRORS: ParseErrorCase[] = [
  { template: '{{ foo }}', position: 0, reason: /placeholder must be .*foo/ },
  { template: 'Hi {{payload.}}', position: 3, reason: /empty path segment/ },
  { template: '{{payload..a}}', position: 0, reason: /empty path segment/ },
  { template: '{{payload.a.}}', position: 0, reason: /empty path segment/ },
  { template: 'abc {{payload.a', position: 4, reason: /unclosed/ },
  { template: '{{payload.a}', position: 0, reason: /unclosed/ },
  { template: '{{payload.a}} then {{payload.b', position: 19, reason: /unclosed/ },
  { template: '{{}}', position: 0, reason: /placeholder must be/ },
  { template: '{{   }}', position: 0, reason: /placeholder must be/ },
  { template: 'ok {{payload.a}} {{ nope }}', position: 17, reason: /nope/ },
  { template: '{{Payload.a}}', position: 0, reason: /placeholder must be/ },
  { template: '{{payloads}}', position: 0, reason: /placeholder must be/ },
  { template: '{{ payload . a }}', position: 0, reason: /placeholder must be/ },
  { template: '{{.payload}}', position: 0, reason: /placeholder must be/ },
  { template: '{{{payload.a}}}', position: 0, reason: /placeholder must be/ },
  { template: '{{payload.a {{payload.b}}', position: 0, reason: /braces/ },
  { template: '{{payload.{a}}}', position: 0, reason: /braces/ },
  { template: '{{process.env.SECRET}}', position: 0, reason: /placeholder must be/ },
];

describe('message templates (docs/api.md §7.2)', () => {
  it.each(RENDER_CASES)('renders $name', ({ template, payload, text, missing = [] }) => {
    expect(render(template, payload)).toEqual({ text, missing, truncated: false });
  });

  it.each(PARSE_ERRORS)('refuses $template at character $position', ({ template, position, reason }) => {
    const parsed = parseTemplate(template);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error.position).toBe(position);
    expect(parsed.error.reason).toMatch(reason);
  });

  it('renders a 1 MiB value and a 1 MiB payload whole when no limit is given', () => {
    const blob = 'é'.repeat(1024 * 1024);
    expect(render('{{payload.blob}}', { blob }).text).toBe(blob);
    const items = Array.from({ length: 30_000 }, (_, i) => ({ i, name: `item ${i}`, tags: ['x', 'y'] }));
    const whole = JSON.stringify({ items });
    expect(whole.length).toBeGreaterThan(1024 * 1024);
    expect(render('{{payload}}', { items })).toEqual({ text: whole, missing: [], truncated: false });
    expect(render('{{payload.items.29999.name}}', { items }).text).toBe('item 29999');
  });

  it('cuts the text at maxLength and says so', () => {
    const blob = 'x'.repeat(1024 * 1024);
    const cut = render('Payload: {{payload.blob}} (end)', { blob }, MAX_MESSAGE_CHARS);
    expect(cut.truncated).toBe(true);
    expect(cut.text).toHaveLength(MAX_MESSAGE_CHARS);
    expect(cut.text.startsWith('Payload: xxx')).toBe(true);

    expect(render('abc{{payload.x}}', { x: 'defgh' }, 5)).toEqual({ text: 'abcde', missing: [], truncated: true });
    expect(render('abc{{payload.x}}', { x: 'de' }, 5)).toEqual({ text: 'abcde', missing: [], truncated: false });
    expect(render('abcdef', {}, 5)).toEqual({ text: 'abcde', missing: [], truncated: true });
    expect(render('{{payload}}', { a: [1, 2, 3] }, 4)).toEqual({ text: '{"a"', missing: [], truncated: true });
  });

  it('still lists the missing paths that come after the cut', () => {
    const rendered = render(
      '{{payload.a}} {{payload.gone}} {{payload.b}} {{payload.also_gone}}',
      { a: 'long text' },
      4,
    );
    expect(rendered).toEqual({
      text: 'long',
      missing: ['payload.gone', 'payload.b', 'payload.also_gone'],
      truncated: true,
    });
  });

  it('never cuts a character outside the Basic Multilingual Plane in half', () => {
    const rendered = render('{{payload.s}}', { s: '😀😀😀' }, 5);
    expect(rendered).toEqual({ text: '😀😀', missing: [], truncated: true });
    expect(render('a{{payload.s}}', { s: '😀' }, 2)).toEqual({ text: 'a', missing: [], truncated: true });
  });
});

/** Characters that stress the parser: braces, dots, spaces and a few outside ASCII. */
const templateChar = fc.constantFrom('{', '}', '.', ' ', 'a', 'p', '0', 'é', '🔥', '\n');
/** A path segment: anything but `.`, `{` and `}`, not empty, not ending in whitespace (the braces' spaces are trimmed). */
const segment = fc
  .oneof(fc.constantFrom('a', 'b', '0', '1', 'items', 'name', 'a b', '$x', '🔥'), fc.string({ minLength: 1 }))
  .filter((s) => !/[.{}]/.test(s) && s.trimEnd() === s && s !== '');

const placeholder = fc
  .tuple(fc.array(segment, { maxLength: 4 }), fc.constantFrom('', ' ', '  '), fc.constantFrom('', ' ', '  '))
  .map(([path, before, after]) => `{{${before}${['payload', ...path].join('.')}${after}}}`);
const textWithoutOpen = fc.string({ unit: fc.constantFrom('}', '.', ' ', 'a', 'é', '🔥', '\n') });
const validTemplate = fc.array(fc.oneof(textWithoutOpen, placeholder), { maxLength: 8 }).map((parts) => parts.join(''));

/** Every (path, value) of a JSON value: object keys by name, array items by index. */
function allPaths(value: unknown, prefix: string[] = []): Array<[string[], unknown]> {
  const here: Array<[string[], unknown]> = [[prefix, value]];
  if (Array.isArray(value)) return here.concat(value.flatMap((item, i) => allPaths(item, [...prefix, String(i)])));
  if (value !== null && typeof value === 'object') {
    return here.concat(Object.entries(value).flatMap(([key, item]) => allPaths(item, [...prefix, key])));
  }
  return here;
}

describe('message template properties', () => {
  it('rendering any JSON value with any valid template never throws', () => {
    fc.assert(
      fc.property(validTemplate, fc.jsonValue(), (template, payload) => {
        const parsed = parseTemplate(template);
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        const rendered = renderTemplate(parsed.parts, payload, 1000);
        expect(typeof rendered.text).toBe('string');
        expect(rendered.text.length).toBeLessThanOrEqual(1000);
        expect(new Set(rendered.missing).size).toBe(rendered.missing.length);
        for (const path of rendered.missing) expect(path === 'payload' || path.startsWith('payload.')).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on arbitrary template text either: it parses or names a position inside it', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: templateChar }), fc.string()), fc.jsonValue(), (template, payload) => {
        const parsed = parseTemplate(template);
        if (parsed.ok) {
          expect(typeof renderTemplate(parsed.parts, payload).text).toBe('string');
        } else {
          expect(parsed.error.position).toBeGreaterThanOrEqual(0);
          expect(parsed.error.position).toBeLessThan(template.length);
          expect(template.slice(parsed.error.position, parsed.error.position + 2)).toBe('{{');
        }
      }),
      { numRuns: 500 },
    );
  });

  it('a template without {{ renders to itself', () => {
    const withoutOpen = fc
      .oneof(fc.string({ unit: templateChar }), fc.string({ unit: 'binary' }))
      .filter((s) => !s.includes('{{'));
    fc.assert(
      fc.property(withoutOpen, fc.jsonValue(), (template, payload) => {
        expect(render(template, payload)).toEqual({ text: template, missing: [], truncated: false });
      }),
      { numRuns: 500 },
    );
  });

  it('lookup finds every path of a generated value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        for (const [path, expected] of allPaths(value)) expect(lookup(value, path)).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('every path that a template can spell renders its value by the rules', () => {
    const spellable = (path: string[]) =>
      path.every((s) => s !== '' && !/[.{}]/.test(s)) && (path.length === 0 || path.at(-1)?.trimEnd() === path.at(-1));
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        for (const [path, expected] of allPaths(value).filter(([p]) => spellable(p))) {
          const written = ['payload', ...path].join('.');
          const rendered = render(`<{{ ${written} }}>`, value);
          if (expected === null) {
            expect(rendered).toEqual({ text: '<>', missing: [written], truncated: false });
          } else {
            const text = typeof expected === 'string' ? expected : JSON.stringify(expected);
            expect(rendered).toEqual({ text: `<${text}>`, missing: [], truncated: false });
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('parsing keeps the text between placeholders exactly', () => {
    fc.assert(
      fc.property(fc.array(textWithoutOpen, { minLength: 1, maxLength: 5 }), (texts) => {
        const template = texts.join('{{payload}}');
        const parsed = parseTemplate(template);
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        const joined = parsed.parts.map((p: TemplatePart) => ('text' in p ? p.text : '{{payload}}')).join('');
        expect(joined).toBe(template);
      }),
    );
  });
});
