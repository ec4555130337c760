import type { WebhookReach } from '../../connections/address-guard.js';
import type { ConnectionSecrets } from '../../connections/connection-secrets.js';
import type { ConnectionType } from '../../connections/connection-types.js';
import { invalidDsn } from '../../connections/dsn-text.js';
import { dsnScheme, schemeGuarantees } from '../../connections/tls-guarantees.js';
import type { TlsMaterial } from '../../connections/tls-material.js';
import { validationFailed } from '../../errors/app-error.js';
import { parseWebhookDsn, SECRET_MIN_LENGTH, type WebhookDsn, webhookEndpointOf } from './webhook-dsn.js';

/** What a webhook sink posts with: the URL, the signing secret, where it may connect, and TLS. */
export interface WebhookSettings {
  /** The URL posted to, without the secret. */
  url: string;
  /** `https://host:port`: what errors name, never the path or query. */
  endpoint: string;
  /** The HMAC-SHA256 key requests are signed with. */
  secret: string;
  /** Which addresses a connection may reach, checked for every address at every connect. */
  reach: WebhookReach;
  /** A private CA to verify the receiver with, and a client certificate for mutual TLS. */
  tls: TlsMaterial;
}

/**
 * Refuses TLS material on http (it would be silently unused), and a connection without a signing
 * secret: a receiver could not tell the service's requests from anyone else's.
 */
function checkWebhookSecrets(dsn: WebhookDsn, secrets: ConnectionSecrets): void {
  const given = Object.keys(secrets.tls).filter(
    (k) => secrets.tls[k as keyof typeof secrets.tls] !== undefined,
  );
  if (given.length > 0 && !dsn.reach.https) {
    throw validationFailed(`tls.${given[0]}`, 'is given but the DSN does not encrypt: use https://');
  }
  if (secrets.password === undefined) {
    throw invalidDsn(
      `needs a signing secret of at least ${SECRET_MIN_LENGTH} characters: add ?secret=... (it is stored sealed and never sent)`,
    );
  }
}

/** The settings for a checked DSN and its secrets. */
export function webhookSettings(dsn: WebhookDsn, secrets: ConnectionSecrets): WebhookSettings {
  const secret = secrets.password ?? dsn.password;
  if (secret === undefined) throw invalidDsn('has no signing secret');
  return { url: dsn.url, endpoint: dsn.endpoint, secret, reach: dsn.reach, tls: { ...secrets.tls } };
}

/** An HTTPS endpoint that receives each batch of changes as one signed JSON POST. */
export const webhookConnectionType: ConnectionType<WebhookSettings, WebhookDsn> = {
  type: 'webhook',
  roles: ['sink'],
  checkDsn: parseWebhookDsn,
  endpointOf: webhookEndpointOf,
  tlsGuarantees: (publicDsn) => schemeGuarantees(dsnScheme(publicDsn) === 'https:'),
  checkTls: checkWebhookSecrets,
  // The stored DSN passes the allow-list again: the operator may have withdrawn private access.
  settings: async (publicDsn, secrets, policy) =>
    webhookSettings(parseWebhookDsn(publicDsn, policy), secrets),
  // Its client library is loaded with the first check.
  reach: async (settings, timeoutMs) => (await import('./reach.js')).reachWebhook(settings, timeoutMs),
};
