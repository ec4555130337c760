import type {
  ConnectionInput,
  ConnectionsService,
  ResolvedConnection,
} from '../connections/connections-service.js';
import type { RequestContext } from '../context.js';
import { type ReachCheck, reachOf, type TestedAs } from './connection-reach.js';

/** How long one server may take to connect or answer during a test. */
const TEST_TIMEOUT_MS = 4_000;
/** The whole test's bound: a server that accepts and then stalls must not hold the request. */
const TOTAL_TIMEOUT_MS = 10_000;

/** What a connection test found: usable when every check is met. */
export interface ConnectionTestResult {
  ok: boolean;
  as: TestedAs;
  checks: ReachCheck[];
}

const MASK = '****';

// Fields of a type's settings that hold secrets, at any depth (password, sslpassword, pass, secret, key).
const SECRET_KEY = /pass|secret|key|token/i;

/** Every secret string the settings (and the DSN as typed) hold, so that no message can echo one. */
function secretsOf(settings: unknown, dsn: string | undefined): string[] {
  const found: string[] = [];
  const walk = (value: unknown, key: string, depth: number) => {
    if (depth > 4 || value === null || value === undefined) return;
    if (typeof value === 'string') {
      if (SECRET_KEY.test(key) && value.length >= 3 && !value.includes('\n')) found.push(value);
      return;
    }
    if (typeof value === 'object') {
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) walk(v, k, depth + 1);
    }
  };
  walk(settings, '', 0);
  if (dsn) {
    try {
      const url = new URL(dsn);
      for (const part of [url.password, url.searchParams.get('password'), url.searchParams.get('secret')]) {
        if (part) found.push(decodeURIComponent(part), part);
      }
    } catch {
      // A DSN that is no URL (duckdb:file) holds no password.
    }
  }
  return [...new Set(found)].filter((s) => s !== MASK).sort((a, b) => b.length - a.length);
}

function scrub(text: string, secrets: readonly string[]): string {
  return secrets.reduce((t, secret) => t.split(secret).join(MASK), text);
}

/**
 * Tests a connection without storing anything: it reaches the server and checks what a pipeline
 * would need of it (for a postgres connection, all that logical replication needs at the source).
 * A check that fails is a finding, not an error; only a connection that cannot be made sense of
 * (its DSN refused, as creating it would be) is an error.
 */
export class ConnectionTester {
  constructor(private readonly connections: ConnectionsService) {}

  /** Tests the connection a create (or, with the name of a stored one, a replace) body describes. */
  async testInput(
    ctx: RequestContext,
    body: ConnectionInput & { as?: TestedAs },
  ): Promise<ConnectionTestResult> {
    const { as, ...input } = body;
    const resolved = await this.connections.resolveInput(ctx, input.name ?? '', input);
    return this.run(resolved, input.dsn, as);
  }

  /** Tests a stored connection. */
  async testStored(ctx: RequestContext, name: string, as?: TestedAs): Promise<ConnectionTestResult> {
    return this.run(await this.connections.resolve(ctx, name), undefined, as);
  }

  private async run(
    connection: ResolvedConnection,
    dsn: string | undefined,
    asked: TestedAs | undefined,
  ): Promise<ConnectionTestResult> {
    // Only a source type can be judged as a source; any other is a sink whatever was asked.
    const as: TestedAs = reachOf(connection.type)?.canBeSource ? (asked ?? 'source') : 'sink';
    const reach = reachOf(connection.type);
    let checks: ReachCheck[];
    if (!reach) {
      checks = [{ name: 'reach', ok: false, message: `A ${connection.type} connection cannot be tested.` }];
    } else {
      let timer: NodeJS.Timeout | undefined;
      const stalled = new Promise<ReachCheck[]>((resolve) => {
        timer = setTimeout(
          () =>
            resolve([
              {
                name: 'reach',
                ok: false,
                message: `The server did not answer within ${TOTAL_TIMEOUT_MS / 1000} seconds.`,
              },
            ]),
          TOTAL_TIMEOUT_MS,
        );
      });
      checks = await Promise.race([reach.check(connection.settings, TEST_TIMEOUT_MS, as), stalled]).finally(
        () => clearTimeout(timer),
      );
    }
    const secrets = secretsOf(connection.settings, dsn);
    const shown = checks.map((c) => ({ ...c, message: scrub(c.message, secrets) }));
    return { ok: shown.every((c) => c.ok), as, checks: shown };
  }
}
