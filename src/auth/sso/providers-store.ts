import { type CommonQueryMethods, sql } from 'slonik';
import { z } from 'zod';
import type { SecretBox } from '../../secrets/secret-box.js';
import { DEFAULT_ORGANIZATION_ID } from '../../store/pool.js';
import {
  OidcSecrets,
  OidcSettings,
  PROVIDER_KINDS,
  type ProviderKind,
  SamlSecrets,
  SamlSettings,
  type SsoProvider,
} from './provider-settings.js';

const ProviderRow = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(PROVIDER_KINDS),
  settings: z.unknown(),
  secrets_sealed: z.string().nullable(),
  enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
type ProviderRow = z.infer<typeof ProviderRow>;

const COLUMNS = sql.fragment`id, name, kind, settings, secrets_sealed, enabled, created_at, updated_at`;

/** The fields written for a provider; the secrets are sealed here, as one JSON document. */
export interface ProviderWrite {
  kind: ProviderKind;
  enabled: boolean;
  settings: Record<string, unknown>;
  secrets: Record<string, unknown>;
}

/**
 * SSO providers of the organization. Settings are stored in clear (they are shown to admins);
 * secrets (client secret, SP private key) only sealed with the master key.
 */
export class ProvidersStore {
  constructor(private readonly secretBox: SecretBox) {}

  async list(db: CommonQueryMethods): Promise<SsoProvider[]> {
    const rows = await db.any(sql.type(ProviderRow)`
      SELECT ${COLUMNS} FROM sso_providers WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} ORDER BY name`);
    return rows.map((row) => this.toProvider(row));
  }

  /** Finds a provider by name; with `lock`, holds a row lock until the transaction ends. */
  async find(db: CommonQueryMethods, name: string, lock = false): Promise<SsoProvider | null> {
    const row = await db.maybeOne(sql.type(ProviderRow)`
      SELECT ${COLUMNS} FROM sso_providers
      WHERE organization_id = ${DEFAULT_ORGANIZATION_ID} AND name = ${name}
      ${lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
    return row ? this.toProvider(row) : null;
  }

  async insert(db: CommonQueryMethods, name: string, write: ProviderWrite): Promise<SsoProvider> {
    const row = await db.one(sql.type(ProviderRow)`
      INSERT INTO sso_providers (organization_id, name, kind, settings, secrets_sealed, enabled)
      VALUES (${DEFAULT_ORGANIZATION_ID}, ${name}, ${write.kind}, ${sql.jsonb(toJson(write.settings))},
              ${this.seal(write.secrets)}, ${write.enabled})
      RETURNING ${COLUMNS}`);
    return this.toProvider(row);
  }

  async update(db: CommonQueryMethods, id: string, write: ProviderWrite): Promise<SsoProvider> {
    const row = await db.one(sql.type(ProviderRow)`
      UPDATE sso_providers
      SET kind = ${write.kind}, settings = ${sql.jsonb(toJson(write.settings))},
          secrets_sealed = ${this.seal(write.secrets)}, enabled = ${write.enabled}, updated_at = now()
      WHERE id = ${id}
      RETURNING ${COLUMNS}`);
    return this.toProvider(row);
  }

  async delete(db: CommonQueryMethods, id: string): Promise<void> {
    await db.query(sql.unsafe`DELETE FROM sso_providers WHERE id = ${id}`);
  }

  private seal(secrets: Record<string, unknown>): string | null {
    const present = Object.fromEntries(Object.entries(secrets).filter(([, value]) => value !== undefined));
    return Object.keys(present).length === 0 ? null : this.secretBox.seal(JSON.stringify(present));
  }

  private toProvider(row: ProviderRow): SsoProvider {
    const secrets: unknown =
      row.secrets_sealed === null ? {} : JSON.parse(this.secretBox.open(row.secrets_sealed));
    const base = {
      id: row.id,
      name: row.name,
      enabled: row.enabled,
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
    return row.kind === 'oidc'
      ? {
          ...base,
          kind: 'oidc',
          settings: OidcSettings.parse(row.settings),
          secrets: OidcSecrets.parse(secrets),
        }
      : {
          ...base,
          kind: 'saml',
          settings: SamlSettings.parse(row.settings),
          secrets: SamlSecrets.parse(secrets),
        };
  }
}

// `undefined` fields are dropped, as JSON would drop them, so that slonik accepts the value.
const toJson = (value: Record<string, unknown>) => JSON.parse(JSON.stringify(value));
