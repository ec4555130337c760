/**
 * What is wrong with a pipeline, for the places its state is shown: the error (a failure, or the
 * reason a running pipeline retries) or else the warning, and the tables a backfill would mend.
 */

export interface Problem {
  kind: 'error' | 'warning';
  text: string;
  /** Tables whose sink copy changed behind the pipeline's back (SINK_TABLE_CHANGED): "Copy again". */
  backfillTables: string[];
}

export function pipelineProblem(
  error: string | null | undefined,
  warning: string | null | undefined,
): Problem | null {
  if (error) return { kind: 'error', text: error, backfillTables: sinkChangedTables(error) };
  if (warning) return { kind: 'warning', text: warning, backfillTables: [] };
  return null;
}

/**
 * The tables named by a SINK_TABLE_CHANGED error: its text gives the backfill call's body
 * (`POST /v1/pipelines/<name>/backfill with {"tables":[...]}`), else each `(the copy of <table>)`.
 */
export function sinkChangedTables(error: string): string[] {
  if (!error.startsWith('SINK_TABLE_CHANGED')) return [];
  const body = /\/backfill with (\{"tables":\[[^\]]*\]\})/.exec(error)?.[1];
  if (body) {
    try {
      const tables = (JSON.parse(body) as { tables?: unknown }).tables;
      if (Array.isArray(tables) && tables.every((t) => typeof t === 'string')) return tables;
    } catch {
      // Fall back to the names in the text.
    }
  }
  return [...new Set([...error.matchAll(/\(the copy of ([^)\s]+)\)/g)].map((m) => m[1] as string))];
}
