import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import {
  AddressRefusedError,
  addressClass,
  addressProblem,
  guardedLookup,
  isInternalName,
} from '../../src/connections/address-guard.js';

describe('webhook address classes', () => {
  it.each([
    ['127.0.0.1', 'private'],
    ['127.255.255.254', 'private'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.0.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['198.18.0.1', 'private'],
    ['169.254.169.254', 'refused'],
    ['0.0.0.0', 'refused'],
    ['0.1.2.3', 'refused'],
    ['224.0.0.1', 'refused'],
    ['239.255.255.250', 'refused'],
    ['255.255.255.255', 'refused'],
    ['240.0.0.1', 'refused'],
    ['192.0.2.10', 'refused'],
    ['198.51.100.1', 'refused'],
    ['203.0.113.5', 'refused'],
    ['8.8.8.8', 'public'],
    ['172.15.255.255', 'public'],
    ['172.32.0.0', 'public'],
    ['100.63.255.255', 'public'],
    ['100.128.0.0', 'public'],
    ['11.0.0.1', 'public'],
    ['192.169.0.1', 'public'],
  ])('IPv4 %s is %s', (ip, kind) => {
    expect(addressClass(ip)).toBe(kind);
  });

  it.each([
    ['::1', 'private'],
    ['::', 'refused'],
    ['fe80::1', 'private'],
    ['febf::1', 'private'],
    ['fec0::1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fd00:ec2::254', 'refused'],
    ['ff02::1', 'refused'],
    ['2001:db8::1', 'refused'],
    ['100::1', 'refused'],
    ['::ffff:127.0.0.1', 'private'],
    ['::ffff:7f00:1', 'private'],
    ['::FFFF:A00:1', 'private'],
    ['::ffff:169.254.169.254', 'refused'],
    ['::ffff:8.8.8.8', 'public'],
    ['::ffff:0:127.0.0.1', 'private'],
    ['::127.0.0.1', 'private'],
    ['::7f00:1', 'private'],
    ['::10.1.2.3', 'private'],
    ['::8.8.8.8', 'public'],
    ['64:ff9b::127.0.0.1', 'private'],
    ['64:ff9b::c0a8:101', 'private'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['64:ff9b:1::1', 'private'],
    ['2002:7f00:1::1', 'private'],
    ['2002:a9fe:a9fe::', 'refused'],
    ['2002:808:808::1', 'public'],
    // Teredo: the client 127.0.0.1, its bits inverted (80ff:fffe).
    ['2001:0:808:808::80ff:fffe', 'private'],
    ['2001:0:a00:1::f7f7:f7f7', 'private'],
    ['2606:4700:4700::1111', 'public'],
    ['2a00:1450::1', 'public'],
    ['[::1]', 'private'],
  ])('IPv6 %s is %s', (ip, kind) => {
    expect(addressClass(ip)).toBe(kind);
  });

  it('refuses what is not an address at all', () => {
    expect(addressClass('localhost')).toBe('refused');
    expect(addressClass('1.2.3')).toBe('refused');
  });

  it('lets private addresses through only when allowed, http only to them, and never the refused ones', () => {
    const strict = { allowPrivate: false, https: true };
    const open = { allowPrivate: true, https: true };
    const plain = { allowPrivate: true, https: false };
    expect(addressProblem('8.8.8.8', strict)).toBeUndefined();
    expect(addressProblem('127.0.0.1', strict)).toMatch(/webhook_allow_private/);
    expect(addressProblem('127.0.0.1', open)).toBeUndefined();
    expect(addressProblem('10.1.1.1', plain)).toBeUndefined();
    expect(addressProblem('8.8.8.8', plain)).toMatch(/use https/);
    for (const policy of [strict, open, plain]) {
      expect(addressProblem('169.254.169.254', policy)).toMatch(/never/);
      expect(addressProblem('0.0.0.0', policy)).toMatch(/never/);
      expect(addressProblem('::', policy)).toMatch(/never/);
    }
    // The message never names the address.
    expect(addressProblem('10.9.8.7', strict)).not.toContain('10.9.8.7');
  });

  it.each([
    ['localhost', true],
    ['LOCALHOST.', true],
    ['api.localhost', true],
    ['localhost.localdomain', true],
    ['ip6-localhost', true],
    ['metadata', true],
    ['printer.local', true],
    ['metadata.google.internal', true],
    ['router.home.arpa', true],
    ['nas.lan', true],
    ['hooks.example.com', false],
    ['hooks.example.com.', false],
    ['localhost.example.com', false],
  ])('host name %s is internal: %s', (name, internal) => {
    expect(isInternalName(name)).toBe(internal);
  });
});

describe('the guarded DNS lookup', () => {
  const resolver =
    (addresses: LookupAddress[]) =>
    (
      _host: string,
      _options: unknown,
      callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
    ) =>
      callback(null, addresses);
  const lookupWith = (
    addresses: LookupAddress[],
    options: { all?: boolean },
    reach = { allowPrivate: false, https: true },
  ) =>
    new Promise<{ error: Error | null; result: unknown; family?: number }>((resolve) =>
      guardedLookup(reach, resolver(addresses))('hooks.example.com', options, (error, result, family) =>
        resolve({ error, result, family }),
      ),
    );

  it('answers every address for happy eyeballs, or the first one', async () => {
    const addresses = [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1::1', family: 6 },
    ];
    expect(await lookupWith(addresses, { all: true })).toEqual({
      error: null,
      result: addresses,
      family: undefined,
    });
    expect(await lookupWith(addresses, {})).toEqual({ error: null, result: '93.184.216.34', family: 4 });
  });

  it('refuses the connection when any one address is internal (a rebinding name)', async () => {
    for (const options of [{ all: true }, {}]) {
      const { error } = await lookupWith(
        [
          { address: '93.184.216.34', family: 4 },
          { address: '::ffff:127.0.0.1', family: 6 },
        ],
        options,
      );
      expect(error).toBeInstanceOf(AddressRefusedError);
      expect((error as AddressRefusedError).code).toBe('WEBHOOK_ADDRESS_REFUSED');
      expect(error?.message).not.toContain('127.0.0.1');
    }
  });

  it('refuses a public address for http, and lets a private one through when allowed', async () => {
    const plain = { allowPrivate: true, https: false };
    expect((await lookupWith([{ address: '8.8.4.4', family: 4 }], {}, plain)).error).toBeInstanceOf(
      AddressRefusedError,
    );
    expect((await lookupWith([{ address: '10.0.0.7', family: 4 }], {}, plain)).result).toBe('10.0.0.7');
  });

  it('passes a resolver error on, and makes an empty answer one', async () => {
    const failing = guardedLookup({ allowPrivate: false, https: true }, (_h, _o, callback) =>
      callback(Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' }), []),
    );
    const error = await new Promise<Error | null>((resolve) => failing('x.example', {}, (e) => resolve(e)));
    expect((error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
    expect(((await lookupWith([], {})).error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });
});
