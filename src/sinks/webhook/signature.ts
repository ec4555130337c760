import { createHmac } from 'node:crypto';

/** The header every request carries its signature in. */
export const SIGNATURE_HEADER = 'x-replicator-signature';

/**
 * The signature header of a body sent at `timestamp` (Unix seconds): `t=<timestamp>,v1=<hex>`,
 * `v1` being HMAC-SHA256 with the connection's secret of `<timestamp>.<body>`. The timestamp is
 * signed with the body, so a receiver that refuses old timestamps cannot be fed a recorded
 * request again later; each attempt is signed anew.
 */
export function signatureHeader(secret: string, timestamp: number, body: string | Buffer): string {
  const hmac = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  return `t=${timestamp},v1=${hmac}`;
}
