/**
 * The service's own addresses as the browser and the identity providers see them. They come from
 * the configured public URL, never from the request's Host header: a forged Host must not move
 * where an identity provider sends its answer.
 */
export class ServiceUrls {
  /** The public URL without a trailing slash, e.g. `https://replicator.example.com/base`. */
  readonly base: string;
  /** The path part of the public URL without a trailing slash (empty at the root). */
  readonly basePath: string;
  readonly secure: boolean;

  constructor(publicUrl: string) {
    let url: URL;
    try {
      url = new URL(publicUrl);
    } catch {
      throw new Error(`the public URL '${publicUrl}' is not an absolute URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') {
      throw new Error(`the public URL '${publicUrl}' must be http or https`);
    }
    if (url.search || url.hash || url.username || url.password) {
      throw new Error(`the public URL '${publicUrl}' must have no query, fragment or credentials`);
    }
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.base = `${url.origin}${this.basePath}`;
    this.secure = url.protocol === 'https:';
  }

  /** Where the browser lands after signing in when it asked for nothing else. */
  get landingPath(): string {
    return `${this.basePath}/app/`;
  }

  /** The path prefix of the sign-in routes, the scope of the browser-binding cookie. */
  get ssoPath(): string {
    return `${this.basePath}/v1/auth/sso/`;
  }

  loginUrl(provider: string): string {
    return `${this.base}/v1/auth/sso/${encodeURIComponent(provider)}/login`;
  }

  /** The OIDC redirect_uri to register at the identity provider. */
  oidcRedirectUri(provider: string): string {
    return `${this.base}/v1/auth/sso/${encodeURIComponent(provider)}/callback`;
  }

  /** The SAML assertion consumer service URL (HTTP-POST binding). */
  samlAcsUrl(provider: string): string {
    return `${this.base}/v1/auth/sso/${encodeURIComponent(provider)}/acs`;
  }

  samlMetadataUrl(provider: string): string {
    return `${this.base}/v1/auth/sso/${encodeURIComponent(provider)}/metadata`;
  }
}
