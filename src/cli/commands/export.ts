import { writeFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { stringify } from 'yaml';
import { type ApiClient, ok, type Schemas } from '../../client/api-client.js';
import { clientCommand, clientFor } from '../client-command.js';
import { escapeReferences } from '../document-file.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { CliIo } from '../io.js';

const HEADER = `# The connections and pipelines of a project, as \`replicator apply -f\` takes them.
# Passwords and TLS material show as ****, which apply reads as "keep the stored one"; for
# another service, write \${NAME} instead and apply fills it from the environment.
`;

const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);

/** A connection as `POST /v1/connections` takes it. */
function connectionElement(c: Schemas['Connection']) {
  return { name: c.name, type: c.type, dsn: c.dsn, ...(Object.keys(c.tls).length > 0 ? { tls: c.tls } : {}) };
}

/** A pipeline as `POST /v1/pipelines` takes it. */
function pipelineElement(p: Schemas['Pipeline']) {
  return {
    name: p.name,
    source: p.source,
    sink: {
      connection: p.sink.connection,
      ...(Object.keys(p.sink.properties).length > 0 ? { properties: p.sink.properties } : {}),
    },
    snapshot: p.snapshot,
    ...(p.verify.interval !== null || p.verify.source_share !== 1
      ? {
          verify: {
            ...(p.verify.interval === null ? {} : { interval: p.verify.interval }),
            ...(p.verify.source_share === 1 ? {} : { source_share: p.verify.source_share }),
          },
        }
      : {}),
    schema_policy: p.schema_policy,
  };
}

/** Every string escaped, so that apply reads back exactly what was exported. */
function escaped(value: unknown): unknown {
  if (typeof value === 'string') return escapeReferences(value);
  if (Array.isArray(value)) return value.map(escaped);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, escaped(v)]));
  }
  return value;
}

/** The project's definitions as one document that `apply` accepts back unchanged. */
async function exportDocument(api: ApiClient) {
  const [connections, summaries] = await Promise.all([
    ok(api.GET('/v1/connections')),
    ok(api.GET('/v1/pipelines')),
  ]);
  const pipelines = await Promise.all(
    summaries.map((s) => ok(api.GET('/v1/pipelines/{name}', { params: { path: { name: s.name } } }))),
  );
  return escaped({
    connections: [...connections].sort(byName).map(connectionElement),
    pipelines: pipelines.sort(byName).map(pipelineElement),
  });
}

export function registerExport(program: Command, io: CliIo): void {
  clientCommand(program, 'export', "print the project's connections and pipelines as a document for apply")
    .addOption(new Option('-o, --output <format>', 'yaml or json').choices(['yaml', 'json']).default('yaml'))
    .option('-f, --file <file>', 'write it to this file instead of stdout')
    .action(async (flags: { output: string; file?: string }, command: Command) => {
      const document = await exportDocument(clientFor(command, io));
      const text =
        flags.output === 'json' ? `${JSON.stringify(document, null, 2)}\n` : HEADER + stringify(document);
      if (!flags.file) return io.out(text);
      try {
        writeFileSync(flags.file, text);
      } catch (error) {
        throw new CliError(
          `cannot write ${flags.file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
          EXIT.failed,
        );
      }
    });
}
