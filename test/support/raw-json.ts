/**
 * Reads JSON text without parsing its values, so a test can compare a value digit for digit as it
 * was written (JSON.parse would read `9007199254740993` as a double and keep one of two equal keys).
 */

const SPACE = /\s/;

/** The index just past the JSON value starting at `from` (after white space). */
function valueEnd(text: string, from: number): number {
  let i = from;
  while (SPACE.test(text[i] as string)) i++;
  let depth = 0;
  for (; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
      if (depth === 0) return i + 1;
    } else if (c === '{' || c === '[') {
      depth++;
    } else if (c === '}' || c === ']') {
      if (depth === 0) return i;
      if (--depth === 0) return i + 1;
    } else if (depth === 0 && (c === ',' || SPACE.test(c as string))) {
      return i;
    }
  }
  return i;
}

/** The elements (for an array) or the members (for an object) of `text`, each as its own text. */
function parts(text: string, open: string): { key?: string; raw: string }[] {
  const out: { key?: string; raw: string }[] = [];
  let i = text.indexOf(open) + 1;
  for (;;) {
    while (SPACE.test(text[i] as string) || text[i] === ',') i++;
    if (i >= text.length || text[i] === '}' || text[i] === ']') return out;
    let key: string | undefined;
    if (open === '{') {
      const end = valueEnd(text, i);
      key = JSON.parse(text.slice(i, end)) as string;
      i = text.indexOf(':', end) + 1;
    }
    while (SPACE.test(text[i] as string)) i++;
    const end = valueEnd(text, i);
    out.push({ key, raw: text.slice(i, end) });
    i = end;
  }
}

/** The members of a JSON object's text, each value as the text it was written as. */
export function rawMembers(text: string): Map<string, string> {
  return new Map(parts(text, '{').map(({ key, raw }) => [key as string, raw]));
}

/** The elements of a JSON array's text, each as the text it was written as. */
export function rawElements(text: string): string[] {
  return parts(text, '[').map(({ raw }) => raw);
}
