import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { SignedXml } from 'xml-crypto';

/** A throw-away signing key and its self-signed certificate, made with openssl. */
export interface SigningPair {
  privateKey: string;
  certificate: string;
}

export function makeSigningPair(commonName: string): SigningPair {
  const dir = mkdtempSync(join(tmpdir(), 'replicator-saml-'));
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem'].concat([
        '-days',
        '2',
        '-subj',
        `/CN=${commonName}`,
      ]),
      { cwd: dir, stdio: 'pipe' },
    );
    return {
      privateKey: readFileSync(join(dir, 'key.pem'), 'utf8'),
      certificate: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface SamlUser {
  nameId: string;
  email?: string;
  name?: string;
  groups?: string[];
}

/** Ways to make a response a service provider must refuse. */
export interface ResponseOptions {
  /** false: the assertion carries no signature at all. */
  sign?: boolean;
  /** Signs with this key instead of the IdP's own (a certificate the service does not trust). */
  signWith?: SigningPair;
  /** Changes the XML after signing (tampering in transit). */
  afterSigning?: (xml: string) => string;
  audience?: string;
  issuer?: string;
  /** The request the response answers; null: none (IdP-initiated). */
  inResponseTo?: string | null;
  /** Overrides InResponseTo in the assertion's subject confirmation only (inside the signature). */
  confirmationInResponseTo?: string | null;
  recipient?: string;
  /** Validity window of the assertion, in ms from now. */
  notBefore?: number;
  notOnOrAfter?: number;
}

/** The AuthnRequest a service provider sent over the HTTP-Redirect binding. */
export interface AuthnRequest {
  id: string;
  issuer: string;
  acsUrl: string;
  relayState: string | undefined;
  /** Whether the redirect carried a signature (SigAlg and Signature parameters). */
  signed: boolean;
  xml: string;
}

/** The form an IdP makes the browser post to the service's ACS URL. */
export interface SamlPost {
  acsUrl: string;
  SAMLResponse: string;
  RelayState: string | undefined;
}

export interface TestSamlIdp {
  entityId: string;
  /** The single sign-on URL (HTTP-Redirect binding) to configure at the service. */
  entryPoint: string;
  certificate: string;
  parseRequest(redirectUrl: string): AuthnRequest;
  /** A signed SAML Response (base64) for a request, as `options` bend it. */
  respond(request: AuthnRequest, user: SamlUser, options?: ResponseOptions): string;
  /**
   * Plays the browser at the IdP: sends the redirect to the entry point as `user`, and returns
   * the auto-post form the IdP answers with (without posting it).
   */
  signIn(redirectUrl: string, user: SamlUser, options?: ResponseOptions): Promise<SamlPost>;
  stop(): Promise<void>;
}

const escapeXml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const newId = () => `_${randomBytes(16).toString('hex')}`;

function attribute(name: string, values: string[]): string {
  const valueXml = values
    .map((value) => `<saml:AttributeValue xsi:type="xs:string">${escapeXml(value)}</saml:AttributeValue>`)
    .join('');
  return `<saml:Attribute Name="${escapeXml(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">${valueXml}</saml:Attribute>`;
}

/**
 * A SAML 2.0 identity provider for tests: an HTTP entry point that reads the AuthnRequest and
 * answers with an auto-post form holding a Response whose assertion is signed (RSA-SHA256,
 * exclusive c14n, enveloped) with a throw-away key.
 */
export async function startSamlIdp(): Promise<TestSamlIdp> {
  const pair = makeSigningPair('replicator test idp');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const entityId = `${origin}/metadata`;
  const entryPoint = `${origin}/sso`;
  let pending: { user: SamlUser; options: ResponseOptions } | undefined;

  function parseRequest(redirectUrl: string): AuthnRequest {
    const url = new URL(redirectUrl);
    const encoded = url.searchParams.get('SAMLRequest');
    if (!encoded) throw new Error('no SAMLRequest in the redirect');
    const xml = inflateRawSync(Buffer.from(encoded, 'base64')).toString('utf8');
    const pick = (pattern: RegExp) => pattern.exec(xml)?.[1] ?? '';
    return {
      id: pick(/<samlp:AuthnRequest[^>]*\sID="([^"]+)"/),
      acsUrl: pick(/AssertionConsumerServiceURL="([^"]+)"/),
      issuer: pick(/<saml:Issuer[^>]*>([^<]+)<\/saml:Issuer>/),
      relayState: url.searchParams.get('RelayState') ?? undefined,
      signed: url.searchParams.has('Signature') && url.searchParams.has('SigAlg'),
      xml,
    };
  }

  function respond(request: AuthnRequest, user: SamlUser, options: ResponseOptions = {}): string {
    const now = Date.now();
    const at = (offset: number) => new Date(now + offset).toISOString();
    const issuer = escapeXml(options.issuer ?? entityId);
    const audience = escapeXml(options.audience ?? request.issuer);
    const recipient = escapeXml(options.recipient ?? request.acsUrl);
    const inResponseTo = options.inResponseTo === undefined ? request.id : options.inResponseTo;
    const inResponseToOf = (id: string | null) => (id === null ? '' : ` InResponseTo="${escapeXml(id)}"`);
    const inResponseToAttribute = inResponseToOf(inResponseTo);
    const confirmationAttribute =
      options.confirmationInResponseTo === undefined
        ? inResponseToAttribute
        : inResponseToOf(options.confirmationInResponseTo);
    const notOnOrAfter = at(options.notOnOrAfter ?? 5 * 60_000);
    const assertionId = newId();
    const attributes = [
      user.email ? attribute('email', [user.email]) : '',
      user.name ? attribute('name', [user.name]) : '',
      user.groups ? attribute('groups', user.groups) : '',
    ].join('');
    const assertion =
      `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ID="${assertionId}" Version="2.0" IssueInstant="${at(0)}">` +
      `<saml:Issuer>${issuer}</saml:Issuer>` +
      '<saml:Subject>' +
      `<saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:persistent">${escapeXml(user.nameId)}</saml:NameID>` +
      '<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">' +
      `<saml:SubjectConfirmationData${confirmationAttribute} NotOnOrAfter="${notOnOrAfter}" Recipient="${recipient}"/>` +
      '</saml:SubjectConfirmation>' +
      '</saml:Subject>' +
      `<saml:Conditions NotBefore="${at(options.notBefore ?? -60_000)}" NotOnOrAfter="${notOnOrAfter}">` +
      `<saml:AudienceRestriction><saml:Audience>${audience}</saml:Audience></saml:AudienceRestriction>` +
      '</saml:Conditions>' +
      `<saml:AuthnStatement AuthnInstant="${at(0)}" SessionIndex="${newId()}">` +
      '<saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext>' +
      '</saml:AuthnStatement>' +
      (attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : '') +
      '</saml:Assertion>';
    let xml =
      `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${newId()}" Version="2.0" IssueInstant="${at(0)}" Destination="${recipient}"${inResponseToAttribute}>` +
      `<saml:Issuer>${issuer}</saml:Issuer>` +
      '<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>' +
      assertion +
      '</samlp:Response>';
    if (options.sign !== false) {
      const key = options.signWith ?? pair;
      const signer = new SignedXml({
        privateKey: key.privateKey,
        publicCert: key.certificate,
        signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
        canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
      });
      signer.addReference({
        xpath: `//*[local-name(.)='Assertion' and @ID='${assertionId}']`,
        transforms: [
          'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
          'http://www.w3.org/2001/10/xml-exc-c14n#',
        ],
        digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
      });
      signer.computeSignature(xml, {
        prefix: 'ds',
        location: { reference: `//*[local-name(.)='Assertion']/*[local-name(.)='Issuer']`, action: 'after' },
      });
      xml = signer.getSignedXml();
    }
    if (options.afterSigning) xml = options.afterSigning(xml);
    return Buffer.from(xml, 'utf8').toString('base64');
  }

  server.on('request', (req, res) => {
    try {
      const url = new URL(req.url ?? '/', origin);
      if (url.pathname !== '/sso' || !pending) {
        res.statusCode = 404;
        res.end();
        return;
      }
      const request = parseRequest(url.toString());
      const samlResponse = respond(request, pending.user, pending.options);
      const relay = request.relayState
        ? `<input type="hidden" name="RelayState" value="${escapeXml(request.relayState)}"/>`
        : '';
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(
        `<!DOCTYPE html><html><body onload="document.forms[0].submit()"><form method="post" action="${escapeXml(request.acsUrl)}">` +
          `<input type="hidden" name="SAMLResponse" value="${samlResponse}"/>${relay}</form></body></html>`,
      );
    } catch (error) {
      res.statusCode = 400;
      res.end((error as Error).message);
    }
  });

  return {
    entityId,
    entryPoint,
    certificate: pair.certificate,
    parseRequest,
    respond,
    async signIn(redirectUrl, user, options = {}) {
      if (!redirectUrl.startsWith(`${entryPoint}?`))
        throw new Error(`not a redirect to the IdP: ${redirectUrl}`);
      pending = { user, options };
      try {
        const res = await fetch(redirectUrl);
        const html = await res.text();
        if (res.status !== 200) throw new Error(`the IdP answered ${res.status}: ${html}`);
        const field = (name: string) =>
          new RegExp(`name="${name}" value="([^"]*)"`)
            .exec(html)?.[1]
            ?.replace(/&quot;/g, '"')
            .replace(/&amp;/g, '&');
        return {
          acsUrl: (/action="([^"]+)"/.exec(html)?.[1] ?? '').replace(/&amp;/g, '&'),
          SAMLResponse: field('SAMLResponse') as string,
          RelayState: field('RelayState'),
        };
      } finally {
        pending = undefined;
      }
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
