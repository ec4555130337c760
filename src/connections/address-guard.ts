import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, isIPv4 } from 'node:net';

/**
 * Which network addresses a webhook may reach, so that a caller who may edit connections cannot
 * make the service POST into its own network (an admin port on loopback, a database on a private
 * subnet, the cloud metadata service).
 *
 * - `public`: anywhere on the internet; reached over https only.
 * - `private`: loopback, RFC 1918, link-local, unique-local, CGNAT, benchmarking, and the IPv6
 *   forms that embed such an IPv4 address; reached only when the operator sets
 *   `connections.webhook_allow_private`, and then over http too.
 * - `refused`: never a webhook receiver, whatever the operator allows: unspecified (0.0.0.0 and ::
 *   reach the service's own machine), multicast, broadcast, reserved and documentation ranges,
 *   and the cloud metadata addresses.
 */
export type AddressClass = 'public' | 'private' | 'refused';

/** What one connection may reach. */
export interface WebhookReach {
  /** `connections.webhook_allow_private`. */
  allowPrivate: boolean;
  /** Whether the connection is https: plain http may only reach private addresses. */
  https: boolean;
}

const RANK: Record<AddressClass, number> = { public: 0, private: 1, refused: 2 };
const worst = (...classes: AddressClass[]): AddressClass =>
  classes.reduce((a, b) => (RANK[b] > RANK[a] ? b : a), 'public');

/** An IPv4 range: its first address and prefix length. */
type Range4 = [string, number, AddressClass];

// The metadata address comes before link-local: the more specific range wins.
const IPV4_RANGES: Range4[] = [
  ['169.254.169.254', 32, 'refused'],
  ['0.0.0.0', 8, 'refused'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'private'],
  ['127.0.0.0', 8, 'private'],
  ['169.254.0.0', 16, 'private'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'refused'],
  ['192.0.2.0', 24, 'refused'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'private'],
  ['198.51.100.0', 24, 'refused'],
  ['203.0.113.0', 24, 'refused'],
  ['224.0.0.0', 4, 'refused'],
  ['240.0.0.0', 4, 'refused'],
];

function ipv4Number(text: string): number {
  return text.split('.').reduce((n, part) => n * 256 + Number(part), 0);
}

const PARSED_RANGES = IPV4_RANGES.map(([base, bits, kind]) => {
  const size = 2 ** (32 - bits);
  const start = ipv4Number(base);
  return { start, end: start + size - 1, kind };
});

function classOfIpv4Number(n: number): AddressClass {
  for (const range of PARSED_RANGES) {
    if (n >= range.start && n <= range.end) return range.kind;
  }
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address (a dotted IPv4 tail allowed); undefined if malformed. */
export function ipv6Groups(text: string): number[] | undefined {
  if (isIP(text) !== 6) return undefined;
  let address = text.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted) {
    const n = ipv4Number(dotted[1] as string);
    address = `${address.slice(0, dotted.index)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', tail] = address.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  const right = tail === undefined ? [] : parse(tail);
  const missing = 8 - left.length - right.length;
  return [...left, ...Array<number>(missing).fill(0), ...right];
}

const v4Of = (high: number, low: number) => high * 65536 + low;

function classOfIpv6(g: number[]): AddressClass {
  const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, h6 = 0, h7 = 0] = g;
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return 'refused'; // :: unspecified
  if (zeroUpTo(7) && h7 === 1) return 'private'; // ::1 loopback
  // ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (SIIT) and ::a.b.c.d (compatible): the IPv4 address decides.
  if (zeroUpTo(5) && f === 0xffff) return classOfIpv4Number(v4Of(h6, h7));
  if (zeroUpTo(4) && e === 0xffff && f === 0) return classOfIpv4Number(v4Of(h6, h7));
  if (zeroUpTo(6)) return classOfIpv4Number(v4Of(h6, h7));
  if (a === 0) return 'refused'; // the rest of ::/8 is reserved
  // NAT64 (64:ff9b::/96) reaches the IPv4 address it embeds; the local-use prefix is a private network's.
  if (a === 0x64 && b === 0xff9b && c === 0 && d === 0 && e === 0 && f === 0) {
    return classOfIpv4Number(v4Of(h6, h7));
  }
  if (a === 0x64 && b === 0xff9b && c === 1) return 'private';
  if (a === 0x100 && b === 0 && c === 0 && d === 0) return 'refused'; // discard-only 100::/64
  // 6to4 (2002::/16) tunnels to the IPv4 address in its next 32 bits.
  if (a === 0x2002) return worst('public', classOfIpv4Number(v4Of(b, c)));
  // Teredo (2001::/32): the server's address, and the client's with its bits inverted.
  if (a === 0x2001 && b === 0) {
    return worst(classOfIpv4Number(v4Of(c, d)), classOfIpv4Number(v4Of(h6 ^ 0xffff, h7 ^ 0xffff)));
  }
  if (a === 0x2001 && b === 0xdb8) return 'refused'; // documentation
  if (a === 0x3fff && (b & 0xf000) === 0) return 'refused'; // documentation 3fff::/20
  // The cloud metadata service over IPv6 (fd00:ec2::254), before the unique-local range it is in.
  if (a === 0xfd00 && b === 0xec2 && c === 0 && d === 0 && e === 0 && f === 0 && h6 === 0 && h7 === 0x254) {
    return 'refused';
  }
  if ((a & 0xff00) === 0xff00) return 'refused'; // multicast
  if ((a & 0xffc0) === 0xfe80) return 'private'; // link-local
  if ((a & 0xffc0) === 0xfec0) return 'private'; // site-local (deprecated)
  if ((a & 0xfe00) === 0xfc00) return 'private'; // unique-local
  return 'public';
}

/** The class of an IP address in its textual form (IPv6 without brackets); anything else is refused. */
export function addressClass(ip: string): AddressClass {
  if (isIPv4(ip)) return classOfIpv4Number(ipv4Number(ip));
  const groups = ipv6Groups(ip.replace(/^\[(.*)\]$/, '$1'));
  return groups ? classOfIpv6(groups) : 'refused';
}

/** Why `ip` may not be reached under `reach`, or undefined when it may. Never names the address. */
export function addressProblem(ip: string, reach: WebhookReach): string | undefined {
  const kind = addressClass(ip);
  if (kind === 'refused') {
    return 'is an address a webhook may never reach (unspecified, multicast, broadcast, reserved, documentation or cloud metadata)';
  }
  if (kind === 'private' && !reach.allowPrivate) {
    return 'is a loopback, private, link-local or otherwise internal address, refused unless the operator sets connections.webhook_allow_private';
  }
  if (kind === 'public' && !reach.https) {
    return 'is a public address: plain http is allowed only to private addresses; use https';
  }
  return undefined;
}

// Names that resolve to the machine itself or to a private network by convention (RFC 6761,
// RFC 6762 appendix G, RFC 8375, ICANN's .internal).
const PRIVATE_SUFFIXES = [
  'localhost',
  'localdomain',
  'local',
  'internal',
  'intranet',
  'private',
  'corp',
  'home',
  'lan',
  'home.arpa',
];

/**
 * Whether a host name is internal by its very form: `localhost` and names under it, the private-use
 * suffixes, and a name of a single label (`metadata`, `db`), which the resolver completes with
 * the machine's own search domains. Its trailing dot, if any, is ignored.
 */
export function isInternalName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (!name.includes('.')) return true;
  if (name === 'ip6-localhost' || name === 'ip6-loopback') return true;
  return PRIVATE_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`));
}

/** A connection refused because of where it would go; `code` tells the runtime it needs a person. */
export class AddressRefusedError extends Error {
  readonly code = 'WEBHOOK_ADDRESS_REFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'AddressRefusedError';
  }
}

type Resolver = (
  hostname: string,
  options: { all: true; family?: number; hints?: number },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

type LookupOptions = { all?: boolean; family?: number | string; hints?: number };
type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

const familyNumber = (family: number | string | undefined): number | undefined =>
  family === 'IPv4'
    ? 4
    : family === 'IPv6'
      ? 6
      : typeof family === 'number' && family !== 0
        ? family
        : undefined;

/**
 * A `lookup` for `net.connect` that resolves the name and refuses the connection unless EVERY
 * address it resolves to may be reached: the check and the connect use the same answer, so a
 * name that resolves to a public address when the connection is saved and to an internal one
 * later (DNS rebinding) is refused when it is used. Answers in the form `net` asks for (one
 * address, or all of them for happy eyeballs).
 */
export function guardedLookup(reach: WebhookReach, resolve: Resolver = dnsLookup as unknown as Resolver) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    const family = familyNumber(options.family);
    resolve(hostname, { all: true, family, hints: options.hints }, (error, addresses) => {
      if (error) {
        callback(error, options.all ? [] : '');
        return;
      }
      if (addresses.length === 0) {
        const none = Object.assign(new Error(`webhook host ${hostname} resolves to no address`), {
          code: 'ENOTFOUND',
        });
        callback(none, options.all ? [] : '');
        return;
      }
      for (const { address } of addresses) {
        const problem = addressProblem(address, reach);
        if (problem) {
          // The address itself is not told: it would map an internal network for whoever asks.
          const refused = new AddressRefusedError(
            `webhook host ${hostname} resolves to an address that ${problem}`,
          );
          callback(refused, options.all ? [] : '');
          return;
        }
      }
      if (options.all) callback(null, addresses);
      else {
        const [first] = addresses as [LookupAddress];
        callback(null, first.address, first.family);
      }
    });
  };
}
