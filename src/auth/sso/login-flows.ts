import { type DatabasePool, sql } from 'slonik';
import { z } from 'zod';
import type { SecretBox } from '../../secrets/secret-box.js';
import type { SecretHasher } from '../secret-token.js';

/** How long a sign-in may take between leaving for the identity provider and coming back. */
export const LOGIN_FLOW_TTL_MS = 10 * 60_000;

const TakenRow = z.object({
  provider_id: z.string(),
  data_sealed: z.string(),
  created_at: z.string(),
  live: z.boolean(),
});

export interface TakenFlow {
  providerId: string;
  /** The data saved at the start, opened; the caller checks its shape. */
  data: unknown;
  createdAt: string;
}

/**
 * Sign-ins under way, in the database so that the identity provider's answer may reach any
 * instance sharing it. A flow is found by the value the answer carries back (OIDC `state`, SAML
 * `RelayState`), stored only as its HMAC; what the flow holds (PKCE verifier, nonce, request id,
 * where to return) is sealed. Taking a flow deletes it: each one completes at most once.
 */
export class LoginFlows {
  constructor(
    private readonly pool: DatabasePool,
    private readonly secretBox: SecretBox,
    private readonly hasher: SecretHasher,
    private readonly ttlMs = LOGIN_FLOW_TTL_MS,
  ) {}

  async save(providerId: string, key: string, data: Record<string, unknown>): Promise<void> {
    // Abandoned sign-ins are cleared as new ones start; the table stays as small as the traffic.
    await this.pool.query(sql.unsafe`DELETE FROM sso_login_flows WHERE expires_at <= now()`);
    await this.pool.query(sql.unsafe`
      INSERT INTO sso_login_flows (state_hash, provider_id, data_sealed, expires_at)
      VALUES (${this.hasher.hash(key)}, ${providerId}, ${this.secretBox.seal(JSON.stringify(data))},
              now() + make_interval(secs => ${this.ttlMs / 1000}))`);
  }

  /** Removes and returns the flow a key names; undefined when it is unknown, used or expired. */
  async take(key: string): Promise<TakenFlow | undefined> {
    const row = await this.pool.maybeOne(sql.type(TakenRow)`
      DELETE FROM sso_login_flows WHERE state_hash = ${this.hasher.hash(key)}
      RETURNING provider_id, data_sealed, created_at, expires_at > now() AS live`);
    if (!row?.live) return undefined;
    return {
      providerId: row.provider_id,
      data: JSON.parse(this.secretBox.open(row.data_sealed)),
      createdAt: row.created_at,
    };
  }
}
