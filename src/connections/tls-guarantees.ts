/**
 * What a DSN's TLS promises, as a set: an update that drops any of them weakens TLS, and then a
 * masked secret is not kept (it would go over a weaker channel than the one it was given for).
 */

const ENCRYPTED = 'encryption';
const VERIFIED_CHAIN = 'verification of the server certificate';
const VERIFIED_HOST = 'verification of the server host name';

// libpq's order; `prefer` and `allow` may fall back to plain text, so they promise nothing.
const SSL_MODE_GUARANTEES: Readonly<Record<string, readonly string[]>> = {
  require: [ENCRYPTED],
  'verify-ca': [ENCRYPTED, VERIFIED_CHAIN],
  'verify-full': [ENCRYPTED, VERIFIED_CHAIN, VERIFIED_HOST],
};

/** What an `sslmode` (postgres, mysql) promises; none when absent, `disable`, `prefer` or `allow`. */
export const sslModeGuarantees = (sslmode: string | null): string[] => [
  ...(SSL_MODE_GUARANTEES[sslmode ?? 'disable'] ?? []),
];

/** What a TLS scheme (`rediss://`, `amqps://`, `tls://`, `https://`) promises: it always verifies. */
export const schemeGuarantees = (tls: boolean): string[] =>
  tls ? [ENCRYPTED, VERIFIED_CHAIN, VERIFIED_HOST] : [];

/** A DSN's query parameters, read leniently from a stored DSN; none when it does not parse. */
export function dsnParams(dsn: string): URLSearchParams {
  try {
    return new URL(dsn).searchParams;
  } catch {
    return new URLSearchParams();
  }
}

/** The URL scheme of a DSN (`rediss:`), read leniently; '' when it does not parse. */
export function dsnScheme(dsn: string): string {
  try {
    return new URL(dsn).protocol.toLowerCase();
  } catch {
    return '';
  }
}
