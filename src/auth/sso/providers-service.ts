import { type DatabasePool, sql, UniqueIntegrityConstraintViolationError } from 'slonik';
import { AppError, notFound } from '../../errors/app-error.js';
import { buildProviderWrite, type InputPolicy, type ProviderInput } from './provider-input.js';
import type { SsoProvider } from './provider-settings.js';
import type { ProvidersStore } from './providers-store.js';
import { bindingSource, describeRoleMapping, type RoleMappingView } from './role-mapping.js';

/** A provider as the API shows it: settings, the addresses to register at the provider, never a secret. */
export interface ProviderView {
  id: string;
  name: string;
  kind: 'oidc' | 'saml';
  enabled: boolean;
  login_url: string;
  issuer?: string;
  client_id?: string;
  client_secret_set?: boolean;
  scopes?: string;
  redirect_uri?: string;
  entry_point?: string;
  idp_issuer?: string;
  idp_certificates?: string[];
  sp_entity_id?: string;
  sp_private_key_set?: boolean;
  acs_url?: string;
  metadata_url?: string;
  role_mapping?: RoleMappingView;
  created_at: string;
  updated_at: string;
}

/** Managing the organization's SSO providers (organization admins). */
export class ProvidersService {
  constructor(
    private readonly pool: DatabasePool,
    private readonly store: ProvidersStore,
    private readonly policy: InputPolicy,
  ) {}

  async list(): Promise<ProviderView[]> {
    const providers = await this.store.list(this.pool);
    return Promise.all(providers.map((provider) => this.view(provider)));
  }

  async get(name: string): Promise<ProviderView> {
    const provider = await this.store.find(this.pool, name);
    if (!provider) throw notFound('SSO provider', name);
    return this.view(provider);
  }

  /** The enabled providers as the sign-in page lists them: nothing but names and where to start. */
  async available(): Promise<{ name: string; kind: 'oidc' | 'saml'; login_url: string }[]> {
    const providers = await this.store.list(this.pool);
    return providers
      .filter((provider) => provider.enabled)
      .map(({ name, kind }) => ({ name, kind, login_url: this.policy.urls.loginUrl(name) }));
  }

  /** The provider a sign-in names, if it exists and is enabled. */
  async findEnabled(name: string): Promise<SsoProvider | undefined> {
    const provider = await this.store.find(this.pool, name);
    return provider?.enabled ? provider : undefined;
  }

  async create(name: string, input: ProviderInput): Promise<ProviderView> {
    const created = await this.pool.transaction(async (tx) => {
      const write = await buildProviderWrite(tx, name, input, undefined, this.policy);
      try {
        return await this.store.insert(tx, name, write);
      } catch (error) {
        if (error instanceof UniqueIntegrityConstraintViolationError) {
          throw new AppError('ALREADY_EXISTS', `SSO provider '${name}' already exists`);
        }
        throw error;
      }
    });
    return this.view(created);
  }

  async replace(name: string, input: ProviderInput & { name?: string }): Promise<ProviderView> {
    if (input.name !== undefined && input.name !== name) {
      throw new AppError('VALIDATION_FAILED', `name: must equal the name in the path ('${name}')`, {
        field: 'name',
      });
    }
    const updated = await this.pool.transaction(async (tx) => {
      const existing = await this.store.find(tx, name, true);
      if (!existing) throw notFound('SSO provider', name);
      const write = await buildProviderWrite(tx, name, input, existing, this.policy);
      return this.store.update(tx, existing.id, write);
    });
    return this.view(updated);
  }

  /**
   * Deletes a provider, its sign-ins under way, and the role bindings its logins made: they were
   * the provider's to give. Users and their identities stay (a provider for the same issuer
   * created later finds them again).
   */
  async delete(name: string): Promise<void> {
    await this.pool.transaction(async (tx) => {
      const existing = await this.store.find(tx, name, true);
      if (!existing) throw notFound('SSO provider', name);
      await tx.query(sql.unsafe`DELETE FROM role_bindings WHERE source = ${bindingSource(name)}`);
      await this.store.delete(tx, existing.id);
    });
  }

  private async view(provider: SsoProvider): Promise<ProviderView> {
    const { urls } = this.policy;
    const role_mapping = provider.settings.role_mapping
      ? await describeRoleMapping(this.pool, provider.settings.role_mapping)
      : undefined;
    const common = {
      id: provider.id,
      name: provider.name,
      kind: provider.kind,
      enabled: provider.enabled,
      login_url: urls.loginUrl(provider.name),
    };
    const times = { created_at: provider.created_at, updated_at: provider.updated_at };
    if (provider.kind === 'oidc') {
      const { issuer, client_id, scopes } = provider.settings;
      return {
        ...common,
        issuer,
        client_id,
        client_secret_set: provider.secrets.client_secret !== '',
        scopes,
        redirect_uri: urls.oidcRedirectUri(provider.name),
        ...(role_mapping ? { role_mapping } : {}),
        ...times,
      };
    }
    const { entry_point, idp_issuer, idp_certificates, sp_entity_id } = provider.settings;
    return {
      ...common,
      entry_point,
      idp_issuer,
      idp_certificates,
      sp_entity_id,
      sp_private_key_set: provider.secrets.sp_private_key !== undefined,
      acs_url: urls.samlAcsUrl(provider.name),
      metadata_url: urls.samlMetadataUrl(provider.name),
      ...(role_mapping ? { role_mapping } : {}),
      ...times,
    };
  }
}
