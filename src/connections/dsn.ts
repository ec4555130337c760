/** Shown in place of a stored secret; sent back in a PUT for the same endpoint, it keeps the stored one. */
export const PASSWORD_MASK = '****';

/** The DSN as shown to callers: the password and sslpassword, if set, replaced by the mask. */
export function maskDsn(publicDsn: string, masked: { password: boolean; sslpassword: boolean }): string {
  let url: URL;
  try {
    url = new URL(publicDsn);
  } catch {
    return publicDsn;
  }
  if (masked.password) url.password = PASSWORD_MASK;
  if (masked.sslpassword)
    url.search = [url.search.replace(/^\?/, ''), `sslpassword=${PASSWORD_MASK}`].filter(Boolean).join('&');
  return url.toString();
}
