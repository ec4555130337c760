/** A column of a plain-text table: its heading, and whether its cells are numbers (right-aligned). */
export interface Column {
  heading: string;
  numeric?: boolean;
}

/** Rows as aligned columns under upper-case headings, two spaces apart, no trailing blanks. */
export function formatTable(columns: readonly Column[], rows: readonly (readonly string[])[]): string {
  const widths = columns.map((c, i) => Math.max(c.heading.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    columns
      .map((c, i) => {
        const cell = cells[i] ?? '';
        const width = widths[i] ?? 0;
        return c.numeric ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return `${[line(columns.map((c) => c.heading.toUpperCase())), ...rows.map(line)].join('\n')}\n`;
}
