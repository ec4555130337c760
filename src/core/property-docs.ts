/** Documentation of one sink property, for error messages, the OpenAPI document and docs/sinks/. */
export interface PropertyDoc {
  key: string;
  default: string;
  description: string;
}

/** A sink's properties as a markdown table, as the pages of docs/sinks/ show them. */
export function propertiesMarkdown(docs: readonly PropertyDoc[]): string {
  const rows = docs.map((d) => `| \`${d.key}\` | ${d.default} | ${d.description} |`);
  return ['| Property | Default | Meaning |', '| --- | --- | --- |', ...rows].join('\n');
}
