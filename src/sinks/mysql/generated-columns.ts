import type { ColumnSchema, GeneratedColumn, TableSchema } from '../../core/change.js';
import { mysqlTypeOf } from './column-types.js';
import { quoteIdent } from './ddl.js';

/**
 * PostgreSQL's `GENERATED ALWAYS AS (...) STORED` columns as MySQL generated columns. Their values
 * are not streamed, so the target computes them itself, from the same expression carried over, but
 * only an expression whose MySQL reading computes the same values: column references, number and
 * string literals, `+`, `-`, `*`, `||` (as CONCAT), unary minus, and the functions of FUNCTIONS;
 * nothing else (no division, whose integer form differs, no casts of columns, no operators or
 * functions whose MySQL meaning differs). Anything else is not carried over: see `generatedColumnsOf`.
 */

/** Functions whose MySQL namesake gives the same values (length is characters in PostgreSQL). */
const FUNCTIONS: Record<string, string> = {
  lower: 'LOWER',
  upper: 'UPPER',
  abs: 'ABS',
  coalesce: 'COALESCE',
  length: 'CHAR_LENGTH',
  char_length: 'CHAR_LENGTH',
};

type ValueType = 'number' | 'text';
interface Typed {
  sql: string;
  type: ValueType;
  /** A column of an integer type: exact as a numeric too, so its `::numeric` (which PostgreSQL adds) changes nothing. */
  integer?: boolean;
}

/**
 * Which values of a source type both servers compute alike: integers, DECIMAL-mapped numerics and
 * doubles as numbers (not `real`, which MySQL computes in double), `text` and `varchar` as text.
 */
function valueTypeOf(typeName: string): ValueType | undefined {
  const type = mysqlTypeOf({ typeName, isKey: false });
  if (/^(?:SMALLINT|INT|BIGINT|DECIMAL\(\d+,\d+\)|DOUBLE)$/.test(type)) return 'number';
  if (typeName === 'text' || /^character varying(?:\(\d+\))?$/.test(typeName)) return 'text';
  return undefined;
}

const INTEGER_TYPES = /^(?:smallint|integer|bigint)$/;

/** Functions and the types they take and give. */
const SIGNATURES: Record<string, { arg: ValueType; result: ValueType }> = {
  lower: { arg: 'text', result: 'text' },
  upper: { arg: 'text', result: 'text' },
  length: { arg: 'text', result: 'number' },
  char_length: { arg: 'text', result: 'number' },
  abs: { arg: 'number', result: 'number' },
};

/** Casts of a literal pg_get_expr writes that say only what the literal already is. */
const TEXT_CASTS = new Set(['text', 'character varying']);
const NUMBER_CASTS = new Set(['integer', 'bigint', 'smallint', 'numeric']);

type Token =
  | { kind: 'number'; text: string }
  | { kind: 'string'; text: string }
  | { kind: 'name'; text: string; quoted: boolean }
  | { kind: 'op'; text: string };

class Untranslatable extends Error {}

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expression.length) {
    const rest = expression.slice(i);
    const space = /^\s+/.exec(rest);
    const number = /^\d+(?:\.\d+)?/.exec(rest);
    // pg_get_expr writes names in lower case unless quoted, and COALESCE in capitals.
    const name = /^[A-Za-z_][A-Za-z0-9_$]*/.exec(rest);
    const op = /^(?:::|\|\||[-+*(),])/.exec(rest);
    if (space) {
      i += space[0].length;
    } else if (number) {
      tokens.push({ kind: 'number', text: number[0] });
      i += number[0].length;
    } else if (name) {
      tokens.push({ kind: 'name', text: name[0], quoted: false });
      i += name[0].length;
    } else if (rest.startsWith("'") || rest.startsWith('"')) {
      const quote = rest[0] as string;
      let text = '';
      let j = 1;
      for (;;) {
        if (j >= rest.length) throw new Untranslatable('an unterminated literal');
        if (rest[j] === quote) {
          if (rest[j + 1] !== quote) break;
          j++;
        }
        text += rest[j];
        j++;
      }
      tokens.push(quote === "'" ? { kind: 'string', text } : { kind: 'name', text, quoted: true });
      i += j + 1;
    } else if (op) {
      tokens.push({ kind: 'op', text: op[0] });
      i += op[0].length;
    } else {
      throw new Untranslatable(`${JSON.stringify(rest[0])}`);
    }
  }
  return tokens;
}

/** MySQL's text of a string literal, with NO_BACKSLASH_ESCAPES off (the sink's sessions). */
const stringLiteral = (text: string) => `'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;

/** A recursive-descent reading of the subset, written as MySQL fully parenthesised. */
class Translator {
  private at = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly columns: ReadonlyMap<string, ValueType | undefined>,
    private readonly integers: ReadonlySet<string>,
  ) {}

  translate(): Typed {
    const expression = this.sum();
    if (this.at !== this.tokens.length) throw new Untranslatable('trailing text');
    return expression;
  }

  private peek = () => this.tokens[this.at];
  private isOp = (text: string) => {
    const t = this.peek();
    return t?.kind === 'op' && t.text === text;
  };
  private expect(text: string) {
    if (!this.isOp(text)) throw new Untranslatable(`expected ${text}`);
    this.at++;
  }

  private sum(): Typed {
    let left = this.product();
    for (;;) {
      if (this.isOp('+') || this.isOp('-')) {
        const op = (this.tokens[this.at++] as Token).text;
        left = number(`(${left.sql} ${op} ${of(this.product(), 'number', op)})`, left, op);
      } else if (this.isOp('||')) {
        this.at++;
        left = {
          sql: `CONCAT(${of(left, 'text', '||')}, ${of(this.product(), 'text', '||')})`,
          type: 'text',
        };
      } else {
        return left;
      }
    }
  }

  private product(): Typed {
    let left = this.unary();
    while (this.isOp('*')) {
      this.at++;
      left = number(`(${left.sql} * ${of(this.unary(), 'number', '*')})`, left, '*');
    }
    return left;
  }

  private unary(): Typed {
    if (this.isOp('-')) {
      this.at++;
      return { sql: `(- ${of(this.unary(), 'number', '-')})`, type: 'number' };
    }
    return this.primary();
  }

  private primary(): Typed {
    const token = this.tokens[this.at++];
    if (!token) throw new Untranslatable('an incomplete expression');
    if (token.kind === 'op' && token.text === '(') {
      const inner = this.sum();
      this.expect(')');
      if (!this.isOp('::')) return inner;
      if (inner.integer && this.castName() === 'numeric') return { sql: inner.sql, type: 'number' };
      throw new Untranslatable('a cast of an expression');
    }
    if (token.kind === 'number') return { sql: this.literalCast(token.text, NUMBER_CASTS), type: 'number' };
    if (token.kind === 'string') {
      // pg_get_expr writes a negative number constant as a string cast to its type.
      const cast = this.castName();
      if (cast === undefined || TEXT_CASTS.has(cast)) return { sql: stringLiteral(token.text), type: 'text' };
      if (NUMBER_CASTS.has(cast) && /^-?\d+(?:\.\d+)?$/.test(token.text))
        return { sql: `(${token.text})`, type: 'number' };
      throw new Untranslatable(`a cast to ${cast}`);
    }
    if (token.kind === 'name') {
      if (!token.quoted && this.isOp('(')) return this.call(token.text.toLowerCase());
      if (!this.columns.has(token.text)) throw new Untranslatable(`the name ${token.text}`);
      const type = this.columns.get(token.text);
      if (type === undefined)
        throw new Untranslatable(`the column ${token.text}, of a type computed differently`);
      if (this.isOp('::')) throw new Untranslatable('a cast of a column');
      return { sql: quoteIdent(token.text), type, integer: this.integers.has(token.text) };
    }
    throw new Untranslatable(`the operator ${token.text}`);
  }

  private literalCast(text: string, allowed: ReadonlySet<string>): string {
    const cast = this.castName();
    if (cast !== undefined && !allowed.has(cast)) throw new Untranslatable(`a cast to ${cast}`);
    return text;
  }

  /** The type of a `::type` after a literal, if there is one. */
  private castName(): string | undefined {
    if (!this.isOp('::')) return undefined;
    this.at++;
    const words: string[] = [];
    for (let t = this.peek(); t?.kind === 'name' && !t.quoted; t = this.peek()) {
      words.push(t.text);
      this.at++;
    }
    if (words.length === 0) throw new Untranslatable('a cast');
    return words.join(' ');
  }

  private call(name: string): Typed {
    this.expect('(');
    const args = [this.sum()];
    while (this.isOp(',')) {
      this.at++;
      args.push(this.sum());
    }
    this.expect(')');
    if (this.isOp('::')) throw new Untranslatable('a cast of a function');
    if (name === 'coalesce') {
      const type = (args[0] as Typed).type;
      return { sql: `COALESCE(${args.map((a) => of(a, type, name)).join(', ')})`, type };
    }
    const signature = SIGNATURES[name];
    if (!signature || args.length !== 1) throw new Untranslatable(`the function ${name}`);
    return {
      sql: `${FUNCTIONS[name]}(${of(args[0] as Typed, signature.arg, name)})`,
      type: signature.result,
    };
  }
}

/** The SQL of an operand of `what`, which takes `type`. */
function of(operand: Typed, type: ValueType, what: string): string {
  if (operand.type !== type) throw new Untranslatable(`${what} of ${operand.type}`);
  return operand.sql;
}

const number = (sql: string, left: Typed, op: string): Typed => {
  of(left, 'number', op);
  return { sql, type: 'number' };
};

/** The MySQL expression of a PostgreSQL generated column's, or why it cannot be carried over. */
export function mysqlGeneratedExpression(
  generated: GeneratedColumn,
  columns: readonly Pick<ColumnSchema, 'name' | 'typeName'>[],
): { sql: string } | { reason: string } {
  const type = valueTypeOf(generated.typeName);
  if (type === undefined) return { reason: `its type ${generated.typeName} is not one computed alike` };
  try {
    const typed = new Map(columns.map((c) => [c.name, valueTypeOf(c.typeName)]));
    const integers = new Set(columns.filter((c) => INTEGER_TYPES.test(c.typeName)).map((c) => c.name));
    const expression = new Translator(tokenize(generated.expression), typed, integers).translate();
    if (expression.type !== type) return { reason: `its expression gives ${expression.type}, not ${type}` };
    return { sql: expression.sql };
  } catch (error) {
    if (error instanceof Untranslatable) return { reason: `its expression has ${error.message}` };
    throw error;
  }
}

/**
 * The column definitions of the source's generated columns that can be carried over, and those
 * left out (not created in the target, as their values are never streamed) with the reason.
 */
export function generatedColumnsOf(source: TableSchema): {
  definitions: string[];
  leftOut: { column: string; reason: string }[];
} {
  const definitions: string[] = [];
  const leftOut: { column: string; reason: string }[] = [];
  for (const generated of source.generated ?? []) {
    const expression = mysqlGeneratedExpression(generated, source.columns);
    if ('reason' in expression) {
      leftOut.push({ column: generated.name, reason: expression.reason });
      continue;
    }
    const type = mysqlTypeOf({ typeName: generated.typeName, isKey: false });
    definitions.push(`${quoteIdent(generated.name)} ${type} GENERATED ALWAYS AS (${expression.sql}) STORED`);
  }
  return { definitions, leftOut };
}
