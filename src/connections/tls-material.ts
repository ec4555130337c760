import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { validationFailed } from '../errors/app-error.js';

/** TLS material given as PEM text with a connection; stored sealed and never returned. */
export interface TlsMaterial {
  /** One or more CA certificates the server's certificate must chain to. */
  ca_cert?: string;
  /** Client certificate, for servers that authenticate clients by certificate. */
  client_cert?: string;
  /** The client certificate's private key; encrypted keys take the DSN's sslpassword. */
  client_key?: string;
}

export const TLS_FIELDS = ['ca_cert', 'client_cert', 'client_key'] as const;
export type TlsField = (typeof TLS_FIELDS)[number];

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function certificates(field: TlsField, pem: string): X509Certificate[] {
  const blocks = pem.match(CERT_BLOCK) ?? [];
  if (blocks.length === 0) {
    throw validationFailed(`tls.${field}`, 'must be PEM text starting with -----BEGIN CERTIFICATE-----');
  }
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw validationFailed(`tls.${field}`, `certificate ${i + 1} is not a valid X.509 certificate`);
    }
  });
}

function privateKey(pem: string, passphrase: string | undefined): KeyObject {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    throw validationFailed(
      'tls.client_key',
      'must be PEM text starting with -----BEGIN ... PRIVATE KEY-----',
    );
  }
  try {
    return createPrivateKey({ key: pem, format: 'pem', passphrase: passphrase ?? '' });
  } catch {
    throw validationFailed(
      'tls.client_key',
      'cannot be read: not a PEM private key, or encrypted and the DSN has no (or the wrong) sslpassword',
    );
  }
}

/**
 * Checks TLS material before it is stored: certificates parse, the client certificate and key
 * come together, the key opens with the DSN's sslpassword and belongs to the certificate.
 */
export function checkTlsMaterial(tls: TlsMaterial, sslpassword: string | undefined): void {
  if (tls.ca_cert !== undefined) certificates('ca_cert', tls.ca_cert);
  if ((tls.client_cert === undefined) !== (tls.client_key === undefined)) {
    const missing = tls.client_cert === undefined ? 'client_cert' : 'client_key';
    const other = missing === 'client_cert' ? 'client_key' : 'client_cert';
    throw validationFailed(`tls.${missing}`, `is required with tls.${other}`);
  }
  if (tls.client_cert !== undefined && tls.client_key !== undefined) {
    const [cert] = certificates('client_cert', tls.client_cert);
    const key = privateKey(tls.client_key, sslpassword);
    if (cert && !cert.checkPrivateKey(key)) {
      throw validationFailed('tls.client_key', 'does not belong to tls.client_cert');
    }
  }
}
