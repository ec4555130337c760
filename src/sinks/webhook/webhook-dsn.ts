import { isIP } from 'node:net';
import { addressProblem, isInternalName, type WebhookReach } from '../../connections/address-guard.js';
import type { CheckedDsn } from '../../connections/connection-types.js';
import { PASSWORD_MASK } from '../../connections/dsn.js';
import { decode, hasControl, invalidDsn } from '../../connections/dsn-text.js';
import type { LocalAccessPolicy } from '../../connections/local-access.js';

/** A webhook DSN that passed the allow-list: the URL posted to, and its signing secret apart. */
export interface WebhookDsn extends CheckedDsn {
  /** The URL requests go to: the DSN without its secret (the same as `publicDsn`). */
  url: string;
  /** `https://host:port` (or http), what messages name: the path and query may hold a receiver's token. */
  endpoint: string;
  /** Host name, or IP address without brackets. */
  host: string;
  reach: WebhookReach;
  /** The HMAC-SHA256 signing secret, from `?secret=` (or the user part's password, as the API shows it). */
  password: string | undefined;
  sslpassword: undefined;
}

/** A signing secret shorter than this could be guessed from one signed body, offline. */
export const SECRET_MIN_LENGTH = 16;
const SECRET_MAX_LENGTH = 1024;

function parseUrl(dsn: string): URL {
  try {
    return new URL(dsn);
  } catch {
    throw invalidDsn('must be a URL such as https://receiver.example.com/hooks?secret=...');
  }
}

function checkSecret(secret: string): string {
  if (secret === PASSWORD_MASK) return secret;
  if (hasControl(secret)) throw invalidDsn('the secret contains a control character');
  if (secret.length < SECRET_MIN_LENGTH || secret.length > SECRET_MAX_LENGTH) {
    throw invalidDsn(`the secret must be ${SECRET_MIN_LENGTH} to ${SECRET_MAX_LENGTH} characters long`);
  }
  return secret;
}

/**
 * Takes the `secret` parameter out of a query, the other parameters kept as written (they go to
 * the receiver). A parameter named so in another case is refused: it would be sent, and stored
 * in clear, instead of being kept secret.
 */
function takeSecret(search: string): { secret: string | undefined; rest: string } {
  let secret: string | undefined;
  const rest: string[] = [];
  for (const pair of search.replace(/^\?/, '').split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = decode(eq < 0 ? pair : pair.slice(0, eq), 'parameter name');
    if (key.toLowerCase() !== 'secret') {
      rest.push(pair);
      continue;
    }
    if (key !== 'secret') throw invalidDsn("write the parameter 'secret' in lower case");
    if (secret !== undefined) throw invalidDsn("parameter 'secret' is given more than once");
    secret = decode(eq < 0 ? '' : pair.slice(eq + 1), 'secret');
  }
  return { secret, rest: rest.join('&') };
}

/**
 * Checks a webhook DSN, `https://host[:port]/path[?query][&secret=...]`, without touching the
 * network. https is required; plain http, and hosts that are internal by their address or their
 * name, only where the operator sets `connections.webhook_allow_private` (http then only to
 * internal hosts: a name is checked again, address by address, at every connect). The `secret`
 * parameter is the signing secret: taken out of the URL, never sent. No user part (HTTP Basic
 * authentication is not supported: requests are signed), except a password alone, which is the
 * secret as the API shows it back (`https://:****@host/path`). Every refusal is a 422 INVALID_DSN
 * naming the part, never echoing a value.
 */
export function parseWebhookDsn(dsn: string, policy: LocalAccessPolicy): WebhookDsn {
  if (hasControl(dsn)) throw invalidDsn('contains a control character (NUL, CR, LF, tab)');
  const url = parseUrl(dsn);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw invalidDsn('scheme must be https://');
  }
  const https = url.protocol === 'https:';
  if (!https && !policy.webhookAllowPrivate) {
    throw invalidDsn(
      'scheme must be https://; plain http:// is allowed only to internal hosts, where the operator sets connections.webhook_allow_private',
    );
  }
  if (url.hash !== '' || dsn.includes('#')) throw invalidDsn('must not have a #fragment');
  if (url.username !== '') {
    throw invalidDsn(
      'must not have a user name: HTTP Basic authentication is not supported; requests are signed with the secret (?secret=...)',
    );
  }

  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '') throw invalidDsn('must name a host');
  if (url.port === '0') throw invalidDsn('port must be 1 to 65535');
  const reach: WebhookReach = { allowPrivate: policy.webhookAllowPrivate, https };
  if (isIP(host) !== 0) {
    const problem = addressProblem(host, reach);
    if (problem) throw invalidDsn(`the host ${problem}`);
  } else if (isInternalName(host) && !policy.webhookAllowPrivate) {
    throw invalidDsn(
      'the host is an internal name (localhost, a single label, or a private-use suffix such as .local or .internal), refused unless the operator sets connections.webhook_allow_private',
    );
  }

  const { secret: inQuery, rest } = takeSecret(url.search);
  const inUser = url.password === '' ? undefined : decode(url.password, 'password');
  if (inQuery !== undefined && inUser !== undefined) {
    throw invalidDsn('has a secret both in the user part and in the query');
  }
  const given = inQuery ?? inUser;
  const password = given === undefined ? undefined : checkSecret(given);

  url.password = '';
  url.search = rest;
  const publicDsn = url.href;
  return {
    url: publicDsn,
    endpoint: url.origin,
    host,
    reach,
    password,
    sslpassword: undefined,
    publicDsn,
  };
}

/**
 * What a stored secret is bound to: the whole URL, path and query included, since a receiver may
 * be told apart by its path alone (one host serving many). Read leniently; a stored DSN that
 * cannot be read matches no other.
 */
export function webhookEndpointOf(dsn: string): string {
  try {
    const url = new URL(dsn);
    url.username = '';
    url.password = '';
    return url.href;
  } catch {
    return `\u0000${dsn}`;
  }
}
