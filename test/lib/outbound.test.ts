import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { checkOutboundUrl, isPrivateAddress, OutboundUrlError } from '../../src/lib/outbound.js';

describe('isPrivateAddress', () => {
  const privateAddresses = [
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '192.0.2.1',
    '198.51.100.7',
    '203.0.113.9',
    '198.18.0.1',
    '::',
    '::1',
    '[::1]',
    'fc00::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '2001:db8::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '0:0:0:0:0:ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:a9fe:a9fe',
    '64:ff9b::7f00:1',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '::127.0.0.1',
    '::7f00:1',
    '::ffff:0:7f00:1',
    '64:ff9b:1::a00:1',
    '2002:7f00:1::1',
    'localhost',
    'not an address',
    '',
  ];
  it.each(privateAddresses)('%s is private', (address) => {
    expect(isPrivateAddress(address)).toBe(true);
  });

  const publicAddresses = [
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '100.63.255.255',
    '100.128.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::808:808',
  ];
  it.each(publicAddresses)('%s is public', (address) => {
    expect(isPrivateAddress(address)).toBe(false);
  });
});

/** A resolver that answers `addresses` for every name and counts its calls. */
function fakeLookup(...addresses: string[]) {
  const calls: string[] = [];
  const lookup = async (host: string): Promise<LookupAddress[]> => {
    calls.push(host);
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { lookup, calls };
}

describe('checkOutboundUrl', () => {
  const refused = [
    'http://127.0.0.1',
    'http://127.0.0.1:8080/hook',
    'http://localhost',
    'http://localhost:3000/x',
    'http://api.localhost/',
    'http://[::1]',
    'http://[::1]:9000/',
    'http://10.0.0.1',
    'http://169.254.169.254/latest/meta-data/',
    'http://100.64.0.1',
    'http://[::ffff:127.0.0.1]',
    'http://[::ffff:7f00:1]',
    'http://[0:0:0:0:0:ffff:127.0.0.1]/',
    'http://[::127.0.0.1]/',
    'http://[64:ff9b::169.254.169.254]/',
    'http://[fe80::1]/',
    'http://[fc00::1]/',
    'http://2130706433',
    'http://2130706433:8080/hook',
    'http://0x7f000001',
    'http://0x7f.1',
    'http://017700000001',
    'http://127.1',
    'http://127.0.0.1./',
    'http://0/',
    'https://192.168.0.1/',
    'ftp://example.com/file',
    'file:///etc/passwd',
    'gopher://example.com/',
    'javascript:alert(1)',
    'http://user:pass@example.com/',
    'http://user@example.com/',
    'https://:secret@example.com/',
    'not a url',
    '/relative/path',
    '',
  ];
  it.each(refused)('refuses %j', async (url) => {
    const { lookup } = fakeLookup('93.184.216.34');
    await expect(checkOutboundUrl(url, { allowPrivate: false, lookup })).rejects.toBeInstanceOf(OutboundUrlError);
  });

  it('refuses a host name that resolves to a private address, or to any private address among several', async () => {
    for (const answers of [['127.0.0.1'], ['10.1.2.3'], ['::1'], ['93.184.216.34', '127.0.0.1'], ['::ffff:7f00:1']]) {
      const { lookup, calls } = fakeLookup(...answers);
      await expect(
        checkOutboundUrl('https://hooks.example.com/in', { allowPrivate: false, lookup }),
      ).rejects.toBeInstanceOf(OutboundUrlError);
      expect(calls).toEqual(['hooks.example.com']);
    }
  });

  it('refuses a host name that does not resolve, or resolves to nothing', async () => {
    const failing = async (): Promise<LookupAddress[]> => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    await expect(
      checkOutboundUrl('https://nowhere.example.com/', { allowPrivate: false, lookup: failing }),
    ).rejects.toBeInstanceOf(OutboundUrlError);
    await expect(
      checkOutboundUrl('https://empty.example.com/', { allowPrivate: false, lookup: fakeLookup().lookup }),
    ).rejects.toBeInstanceOf(OutboundUrlError);
  });

  it('accepts a host name that resolves only to public addresses', async () => {
    const { lookup, calls } = fakeLookup('93.184.216.34', '2606:2800:220:1::1');
    const url = await checkOutboundUrl('https://hooks.example.com/in?x=1', { allowPrivate: false, lookup });
    expect(url.href).toBe('https://hooks.example.com/in?x=1');
    expect(calls).toEqual(['hooks.example.com']);
  });

  it.each([
    'http://93.184.216.34/hook',
    'https://8.8.8.8:8443/',
    'http://[2606:4700:4700::1111]/',
    'http://[::ffff:8.8.8.8]/',
  ])('accepts the literal public address %s without calling lookup', async (raw) => {
    const { lookup, calls } = fakeLookup('127.0.0.1');
    await expect(checkOutboundUrl(raw, { allowPrivate: false, lookup })).resolves.toBeInstanceOf(URL);
    expect(calls).toEqual([]);
  });

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://localhost/',
    'http://[::1]/',
    'http://10.0.0.1',
    'http://169.254.169.254',
    'http://2130706433',
    'https://hooks.example.com/',
  ])('accepts %s when private destinations are allowed, without resolving it', async (raw) => {
    const { lookup, calls } = fakeLookup('127.0.0.1');
    await expect(checkOutboundUrl(raw, { allowPrivate: true, lookup })).resolves.toBeInstanceOf(URL);
    expect(calls).toEqual([]);
  });

  it.each(['ftp://127.0.0.1/', 'http://user:pass@127.0.0.1/', 'not a url'])(
    'still refuses %j when private destinations are allowed',
    async (raw) => {
      await expect(checkOutboundUrl(raw, { allowPrivate: true })).rejects.toBeInstanceOf(OutboundUrlError);
    },
  );
});
