import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ColumnValue, Row } from '../../src/core/change.js';
import { CopyTextError, copyTextOf, copyTextRows, parseCopyTextLine } from '../../src/core/copy-text.js';

const columns = (...names: string[]) => names.map((name) => ({ name }));

/** Every batch `copyTextRows` yields for these chunks. */
async function batches(chunks: (Buffer | string)[], names: string[], batchRows?: number): Promise<Row[][]> {
  const out: Row[][] = [];
  for await (const batch of copyTextRows(Readable.from(chunks), columns(...names), batchRows))
    out.push(batch);
  return out;
}

async function rows(chunks: (Buffer | string)[], names: string[]): Promise<Row[]> {
  return (await batches(chunks, names)).flat();
}

async function failure(chunks: (Buffer | string)[], names: string[]): Promise<Error> {
  try {
    await rows(chunks, names);
  } catch (error) {
    return error as Error;
  }
  throw new Error('did not throw');
}

/** `bytes` cut into pieces at `cuts`. */
function split(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const point of [...points, bytes.length]) {
    pieces.push(bytes.subarray(from, point));
    from = point;
  }
  return pieces;
}

const bytewise = (bytes: Buffer): Buffer[] => Array.from(bytes, (b) => Buffer.of(b));

describe('parseCopyTextLine', () => {
  it('splits on TAB and reads \\N as NULL', () => {
    expect(parseCopyTextLine('a\tb\tc')).toEqual(['a', 'b', 'c']);
    expect(parseCopyTextLine('\\N\t\t\\N')).toEqual([null, '', null]);
    expect(parseCopyTextLine('')).toEqual(['']);
    expect(parseCopyTextLine('\t')).toEqual(['', '']);
    expect(parseCopyTextLine('\\N')).toEqual([null]);
  });

  it('tells \\N from text that only looks like it', () => {
    expect(parseCopyTextLine('\\\\N\tN\t\\N\\N\t\\Nx\tx\\N')).toEqual(['\\N', 'N', 'NN', 'Nx', 'xN']);
  });

  it('reads every escape', () => {
    expect(parseCopyTextLine('a\\\\b\tc\\td\te\\nf\tg\\rh\ti\\bj\tk\\fl\tm\\vn')).toEqual([
      'a\\b',
      'c\td',
      'e\nf',
      'g\rh',
      'i\bj',
      'k\fl',
      'm\vn',
    ]);
  });

  it('reads octal escapes of one to three digits', () => {
    expect(parseCopyTextLine('\\101\\1010\\12\\1x\\0\\7\\08')).toEqual(['AA0\n\u0001x\u0000\u0007\u00008']);
  });

  it('reads hex escapes of one or two digits, and \\x without one as x', () => {
    expect(parseCopyTextLine('\\x41\\x4\\x4g\\x414\\xg\\x')).toEqual(['A\u0004\u0004gA4xgx']);
    expect(parseCopyTextLine('\\X41')).toEqual(['X41']);
  });

  it('reads escaped bytes as UTF-8', () => {
    expect(parseCopyTextLine('caf\\303\\251\t\\xe6\\xbc\\xa2\\345\\255\\227\t\\xf0\\x9f\\x8e\\x89!')).toEqual(
      ['café', '漢字', '🎉!'],
    );
    expect(parseCopyTextLine('\\303\\251é\\xc3\\xa9')).toEqual(['ééé']);
  });

  it('refuses escaped bytes that are not UTF-8', () => {
    expect(() => parseCopyTextLine('\\377')).toThrow('escaped bytes are not valid UTF-8');
    expect(() => parseCopyTextLine('\\303')).toThrow('escaped bytes are not valid UTF-8');
    expect(() => parseCopyTextLine('\\xc3(')).toThrow('escaped bytes are not valid UTF-8');
  });

  it('takes any other escaped character as itself, TAB included', () => {
    expect(parseCopyTextLine('\\a\\"\\.\\é\\🎉')).toEqual(['a".é🎉']);
    expect(parseCopyTextLine('a\\\tb\tc')).toEqual(['a\tb', 'c']);
    expect(parseCopyTextLine('\\\t\t\\\t')).toEqual(['\t', '\t']);
    expect(parseCopyTextLine('a\\\nb')).toEqual(['a\nb']);
  });

  it('keeps carriage returns, spaces and a BOM as data', () => {
    expect(parseCopyTextLine(' a \r\t\ufeffb')).toEqual([' a \r', '\ufeffb']);
  });

  it('refuses a backslash at the end of the line', () => {
    expect(() => parseCopyTextLine('a\tb\\')).toThrow('a backslash ends the line');
  });

  it('keeps long fields without escapes as they are', () => {
    const long = 'x'.repeat(100_000);
    expect(parseCopyTextLine(`${long}\t\\N\t${long}`)).toEqual([long, null, long]);
  });
});

describe('copyTextRows', () => {
  it('reads rows keyed by column name', async () => {
    expect(await rows(['1\talice\t\\N\n2\t\t\\\\N\n'], ['id', 'name', 'note'])).toEqual([
      { id: '1', name: 'alice', note: null },
      { id: '2', name: '', note: '\\N' },
    ]);
  });

  it('tells the empty string from NULL', async () => {
    expect(await rows(['\t\\N\n\\N\t\n'], ['a', 'b'])).toEqual([
      { a: '', b: null },
      { a: null, b: '' },
    ]);
    expect(await rows(['\n\\N\n\n'], ['only'])).toEqual([{ only: '' }, { only: null }, { only: '' }]);
  });

  it('reads nothing from an empty stream', async () => {
    expect(await batches([], ['a'])).toEqual([]);
    expect(await batches([''], ['a'])).toEqual([]);
    expect(await batches([Buffer.alloc(0)], ['a'])).toEqual([]);
  });

  it('reads a last line that lacks its newline', async () => {
    expect(await rows(['1\ta\n2\tb'], ['id', 'v'])).toEqual([
      { id: '1', v: 'a' },
      { id: '2', v: 'b' },
    ]);
  });

  it('reads a newline escaped with a backslash as data', async () => {
    expect(await rows(['a\\\nb\tc\n'], ['x', 'y'])).toEqual([{ x: 'a\nb', y: 'c' }]);
    // an escaped backslash before a newline does not escape it
    expect(await rows(['a\\\\\nb\\\\\\\nc\n'], ['x'])).toEqual([{ x: 'a\\' }, { x: 'b\\\nc' }]);
  });

  it('stops at the end-of-data marker', async () => {
    expect(await rows(['a\n\\.\nb\n'], ['x'])).toEqual([{ x: 'a' }]);
    expect(await rows(['a\n\\\\.\n'], ['x'])).toEqual([{ x: 'a' }, { x: '\\.' }]);
  });

  it('reads rows of a table without columns', async () => {
    expect(await rows(['\n\n'], [])).toEqual([{}, {}]);
    expect((await failure(['x\n'], [])).message).toBe('COPY text line 1: expected 0 fields, found 1');
  });

  it('reads string chunks', async () => {
    expect(await rows(['a\t', 'b\nc', '\td\n'], ['x', 'y'])).toEqual([
      { x: 'a', y: 'b' },
      { x: 'c', y: 'd' },
    ]);
  });

  it('keeps a column called __proto__ as a column', async () => {
    const [row] = await rows(['p\tc\n'], ['__proto__', 'constructor']);
    expect(Object.keys(row!)).toEqual(['__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')?.value).toBe('p');
    expect(row!.constructor).toBe('c');
    expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
  });

  it('refuses a line with the wrong number of fields, naming it', async () => {
    const few = await failure(['1\ta\n2\n'], ['id', 'v']);
    expect(few).toBeInstanceOf(CopyTextError);
    expect(few.message).toBe('COPY text line 2: expected 2 fields, found 1');
    expect((few as CopyTextError).line).toBe(2);
    expect((await failure(['1\ta\tb\n'], ['id', 'v'])).message).toBe(
      'COPY text line 1: expected 2 fields, found 3',
    );
    expect((await failure(['\n'], ['id', 'v'])).message).toBe('COPY text line 1: expected 2 fields, found 1');
    // an escaped TAB does not separate fields; lines count the newlines escaped in earlier rows
    expect((await failure(['a\\\nb\tc\nd\\\te\n'], ['x', 'y'])).message).toBe(
      'COPY text line 3: expected 2 fields, found 1',
    );
  });

  it('refuses invalid UTF-8 and a dangling backslash', async () => {
    const bad = await failure([Buffer.from('ok\n'), Buffer.from([0x61, 0xff, 0x0a])], ['x']);
    expect(bad).toBeInstanceOf(CopyTextError);
    expect(bad.message).toMatch(/^COPY text line 2: invalid UTF-8/);
    expect((await failure([Buffer.from([0x61, 0xc3])], ['x'])).message).toMatch(/invalid UTF-8/);
    expect((await failure(['a\n\\377\n'], ['x'])).message).toBe(
      'COPY text line 2: escaped bytes are not valid UTF-8',
    );
    expect((await failure(['a\nb\\'], ['x'])).message).toBe('COPY text line 2: the data ends in a backslash');
    expect((await failure(['a\nb\\\\\\'], ['x'])).message).toBe(
      'COPY text line 2: the data ends in a backslash',
    );
    expect(await rows(['a\nb\\\\'], ['x'])).toEqual([{ x: 'a' }, { x: 'b\\' }]);
  });

  it('passes on stream errors', async () => {
    const stream = new Readable({
      read() {
        this.push('a\n');
        this.destroy(new Error('connection lost'));
      },
    });
    const seen: Row[][] = [];
    await expect(
      (async () => {
        for await (const batch of copyTextRows(stream, columns('x'), 1)) seen.push(batch);
      })(),
    ).rejects.toThrow('connection lost');
    expect(seen).toEqual([[{ x: 'a' }]]);
  });

  it('cuts rows into batches of batchRows', async () => {
    const text = Array.from({ length: 2500 }, (_, i) => `${i}\n`).join('');
    const sizes = async (chunks: string[], batchRows?: number) =>
      (await batches(chunks, ['n'], batchRows)).map((batch) => batch.length);
    expect(await sizes([text])).toEqual([1000, 1000, 500]);
    expect(await sizes([text], 2500)).toEqual([2500]);
    expect(await sizes([text], 500)).toEqual([500, 500, 500, 500, 500]);
    expect(await sizes([text], 10_000)).toEqual([2500]);
    expect(await sizes(text.match(/[\s\S]{1,7}/g) ?? [], 999)).toEqual([999, 999, 502]);
    expect(await sizes(['a\nb\nc\n'], 1)).toEqual([1, 1, 1]);
    const all = (await batches([text], ['n'], 300)).flat();
    expect(all.map((row) => Number(row.n))).toEqual(Array.from({ length: 2500 }, (_, i) => i));
  });

  it('refuses a batch size that is not a positive integer', async () => {
    for (const size of [0, -1, 1.5, Number.NaN])
      await expect(batches(['a\n'], ['x'], size)).rejects.toThrow(RangeError);
  });

  it('yields batches as chunks arrive', async () => {
    let pushed = 0;
    const stream = new Readable({
      read() {
        pushed++;
        this.push(pushed <= 3 ? `${pushed}\n` : null);
      },
    });
    const seen: number[] = [];
    for await (const batch of copyTextRows(stream, columns('n'), 1)) {
      seen.push(Number(batch[0]!.n));
      expect(pushed).toBeLessThanOrEqual(Number(batch[0]!.n) + 2);
    }
    expect(seen).toEqual([1, 2, 3]);
  });

  describe('chunk boundaries', () => {
    const names = ['id', 'text', 'note'];
    const text = [
      '1\tcafé 漢字 🎉\t\\N',
      '2\ttab\\there\\nnewline\\\\back\\rcr\t',
      '3\t\\303\\251\\xf0\\x9f\\x8e\\x89\\101\tescaped\\\nnewline',
      '4\t\\\\N\t\\N',
      '5\t\u{10FFFF}\u0080\u07ff\u0800\uffff\tend',
      '',
    ].join('\n');
    const expected: Row[] = [
      { id: '1', text: 'café 漢字 🎉', note: null },
      { id: '2', text: 'tab\there\nnewline\\back\rcr', note: '' },
      { id: '3', text: 'é🎉A', note: 'escaped\nnewline' },
      { id: '4', text: '\\N', note: null },
      { id: '5', text: '\u{10FFFF}\u0080\u07ff\u0800\uffff', note: 'end' },
    ];
    const bytes = Buffer.from(text, 'utf8');

    it('reads the whole text', async () => {
      expect(await rows([bytes], names)).toEqual(expected);
    });

    it('reads it one byte at a time', async () => {
      expect(await rows(bytewise(bytes), names)).toEqual(expected);
    });

    it('reads it cut in two at every byte', async () => {
      for (let cut = 1; cut < bytes.length; cut++)
        expect(await rows(split(bytes, [cut]), names), `cut at ${cut}`).toEqual(expected);
    });

    it('reads it cut in three at every pair of bytes', async () => {
      for (let first = 1; first < bytes.length; first++)
        for (let second = first + 1; second < bytes.length; second++)
          expect(await rows(split(bytes, [first, second]), names), `cut at ${first}, ${second}`).toEqual(
            expected,
          );
    });

    it('finds escaped newlines when the backslashes are in earlier chunks', async () => {
      const tricky = Buffer.from('a\\\\\\\nb\\\\\nc\n', 'utf8');
      const want = [{ x: 'a\\\nb\\' }, { x: 'c' }];
      expect(await rows(bytewise(tricky), ['x'])).toEqual(want);
      for (let cut = 1; cut < tricky.length; cut++)
        expect(await rows(split(tricky, [cut]), ['x'])).toEqual(want);
    });
  });
});

// What COPY TO prints, and, with `fancy`, escapes COPY FROM also reads: octal and hex UTF-8 bytes,
// a backslash before an ordinary character, before a TAB and before a newline.
function encodeField(value: ColumnValue, fancy: (choices: number) => number): string {
  if (value === null) return '\\N';
  let out = '';
  for (const char of value) {
    const style = fancy(4);
    if (style === 1) {
      out += Array.from(Buffer.from(char, 'utf8'), (b) => `\\${b.toString(8).padStart(3, '0')}`).join('');
    } else if (style === 2) {
      out += Array.from(Buffer.from(char, 'utf8'), (b) => `\\x${b.toString(16).padStart(2, '0')}`).join('');
    } else if (style === 3 && !/[0-7xbfnrtvN.]/.test(char)) {
      out += `\\${char}`;
    } else if (char === '\\') {
      out += '\\\\';
    } else if (char === '\t') {
      out += '\\t';
    } else if (char === '\n') {
      out += '\\n';
    } else if (char === '\r') {
      out += '\\r';
    } else {
      out += char;
    }
  }
  return out;
}

describe('copyTextRows round trip', () => {
  const unit = fc.oneof(
    fc.constantFrom('\\', '\t', '\n', '\r', 'N', '.', '\b', '\f', '\v', '\0', '0', '7', 'x', 'é', '漢', '🎉'),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
  );
  const value = fc.option(fc.string({ unit, maxLength: 12 }), { nil: null, freq: 4 });
  const table = fc.integer({ min: 1, max: 4 }).chain((width) =>
    fc.record({
      width: fc.constant(width),
      rows: fc.array(fc.array(value, { minLength: width, maxLength: width }), { maxLength: 12 }),
      fancy: fc.boolean(),
      seed: fc.integer(),
      cuts: fc.array(fc.nat(), { maxLength: 8 }),
      batchRows: fc.integer({ min: 1, max: 5 }),
      lastNewline: fc.boolean(),
    }),
  );

  it('reads back exactly what copyTextOf writes', async () => {
    await fc.assert(
      fc.asyncProperty(table, async ({ width, rows: values }) => {
        const names = Array.from({ length: width }, (_, i) => `c${i}`);
        const got: Row[] = [];
        for await (const batch of copyTextRows(Readable.from([copyTextOf(values)]), columns(...names)))
          got.push(...batch);
        expect(got).toEqual(values.map((row) => Object.fromEntries(row.map((v, i) => [names[i], v]))));
      }),
      { numRuns: 500 },
    );
    expect(copyTextOf([['a\tb', null, 'c\\d\r\n', '']]).toString()).toBe('a\\tb\t\\N\tc\\\\d\\r\\n\t\n');
  });

  it('writes rows of several megabytes, and values wider than its buffers, whole', () => {
    const wide = 'é'.repeat(700_000); // 1.4 MB of UTF-8, more than one buffer
    const rows = Array.from({ length: 40_000 }, (_, i) => [String(i), i % 7 === 0 ? null : `ü${i}\t`]);
    rows.splice(20_000, 0, [wide, 'after']);
    const expected = rows
      .map((row) => row.map((v) => (v === null ? '\\N' : v.replace('\t', '\\t'))).join('\t'))
      .join('\n');
    expect(copyTextOf(rows).toString('utf8')).toBe(`${expected}\n`);
  });

  it('reads back what was encoded, however the bytes are cut', async () => {
    await fc.assert(
      fc.asyncProperty(table, async ({ width, rows: values, fancy, seed, cuts, batchRows, lastNewline }) => {
        let state = seed >>> 0;
        const choose = (choices: number) => {
          if (!fancy) return 0;
          state = (Math.imul(state, 1103515245) + 12345) >>> 0;
          return (state >>> 16) % choices;
        };
        const lines = values.map((row) => row.map((field) => encodeField(field, choose)).join('\t'));
        let text = lines.map((line) => `${line}\n`).join('');
        // without its newline a last empty line would be no line at all
        if (!lastNewline && lines.length > 0 && lines[lines.length - 1] !== '') text = text.slice(0, -1);
        const bytes = Buffer.from(text, 'utf8');
        const names = Array.from({ length: width }, (_, i) => `c${i}`);
        const chunks = split(
          bytes,
          cuts.map((c) => c % (bytes.length + 1)),
        );
        const got: Row[][] = [];
        for await (const batch of copyTextRows(Readable.from(chunks), columns(...names), batchRows))
          got.push(batch);
        expect(
          got.every((batch, i) => batch.length === (i < got.length - 1 ? batchRows : batch.length)),
        ).toBe(true);
        expect(got.every((batch) => batch.length > 0 && batch.length <= batchRows)).toBe(true);
        expect(got.flat()).toEqual(values.map((row) => Object.fromEntries(row.map((v, i) => [names[i], v]))));
      }),
      { numRuns: 500 },
    );
  });
});
