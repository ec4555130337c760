import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAs } from './pg-cluster.js';

/** A throw-away CA with a server certificate for `localhost` and a client certificate, as PEM files and text. */
export interface TestCertificates {
  dir: string;
  ca: string;
  otherCa: string;
  clientCert: string;
  clientKey: string;
  /** The client key encrypted with `passphrase`. */
  clientKeyEncrypted: string;
  passphrase: string;
  /** Server settings that turn TLS on with these files. */
  serverSettings: string[];
}

const openssl = (dir: string, args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });

function issue(dir: string, name: string, subject: string, extensions: string) {
  openssl(
    dir,
    ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subject,
    ]),
  );
  writeFileSync(join(dir, `${name}.ext`), extensions);
  openssl(
    dir,
    ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'].concat([
      '-out',
      `${name}.crt`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    ]),
  );
}

/** Makes the certificates with openssl in a directory the PostgreSQL server can read. */
export function makeTestCertificates(clientUser: string): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'replicator-tls-'));
  const ca = (name: string) =>
    openssl(
      dir,
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.pem`,
        '-days',
        '2',
        '-subj',
        `/CN=${name}`,
      ]),
    );
  ca('ca');
  ca('other-ca');
  issue(dir, 'server', '/CN=localhost', 'subjectAltName=DNS:localhost\n');
  issue(dir, 'client', `/CN=${clientUser}`, 'extendedKeyUsage=clientAuth\n');
  const passphrase = 'key passphrase';
  openssl(dir, [
    'pkcs8',
    '-topk8',
    '-in',
    'client.key',
    '-out',
    'client-enc.key',
    '-passout',
    `pass:${passphrase}`,
  ]);
  writeFileSync(
    join(dir, 'pg_hba.conf'),
    `hostssl all ${clientUser} 127.0.0.1/32 cert\nhost all all 127.0.0.1/32 trust\n`,
  );
  const ids = runAs();
  chmodSync(join(dir, 'server.key'), 0o600);
  if (ids.uid !== undefined) {
    chownSync(dir, ids.uid, ids.gid as number);
    for (const f of ['server.key', 'server.crt', 'ca.pem', 'pg_hba.conf'])
      chownSync(join(dir, f), ids.uid, ids.gid as number);
  }
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  return {
    dir,
    ca: read('ca.pem'),
    otherCa: read('other-ca.pem'),
    clientCert: read('client.crt'),
    clientKey: read('client.key'),
    clientKeyEncrypted: read('client-enc.key'),
    passphrase,
    serverSettings: [
      'ssl=on',
      `ssl_cert_file=${join(dir, 'server.crt')}`,
      `ssl_key_file=${join(dir, 'server.key')}`,
      `ssl_ca_file=${join(dir, 'ca.pem')}`,
      `hba_file=${join(dir, 'pg_hba.conf')}`,
    ],
  };
}
