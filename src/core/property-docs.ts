/** Documentation of one sink property, for error messages, the OpenAPI document and the README. */
export interface PropertyDoc {
  key: string;
  default: string;
  description: string;
}

/** A sink's properties as a markdown table, as the README shows them. */
export function propertiesMarkdown(docs: readonly PropertyDoc[]): string {
  const rows = docs.map((d) => `| \`${d.key}\` | ${d.default} | ${d.description} |`);
  return ['| Property | Default | Meaning |', '| --- | --- | --- |', ...rows].join('\n');
}
