import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { createFairOutbound, type FairOutbound } from './outbound-fair.js';

/**
 * Every outbound call (task callbacks, later push agents) goes through here: http(s) only, no
 * private destinations (unless allowed), checked when the URL is accepted and again on the
 * address actually connected to, so a DNS answer that changes (rebinding) cannot get through.
 */

const blocked = new BlockList();
const V4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];
const V6: Array<[string, number]> = [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID…)
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  ['2002::', 16], // 6to4 (embeds arbitrary IPv4)
  ['64:ff9b:1::', 48], // local-use NAT64 (a local translator to any IPv4)
];
for (const [net, prefix] of V4) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of V6) blocked.addSubnet(net, prefix, 'ipv6');

/**
 * The IPv4 address embedded in IPv4-mapped (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d),
 * IPv4-compatible (::a.b.c.d) or NAT64 (64:ff9b::/96) forms, however the address is written.
 */
function embeddedV4(address: string): string | null {
  // The URL parser writes every IPv6 address one way: compressed, lower-case, hex groups only.
  let canonical: string;
  try {
    canonical = new URL(`http://[${address}]`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const hex = /^(?:::ffff:0:|::ffff:|::|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (hex?.[1] && hex[2]) {
    const hi = Number.parseInt(hex[1], 16);
    const lo = Number.parseInt(hex[2], 16);
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return null;
}

/** True for loopback, private, link-local, CGNAT, unique-local, multicast, reserved and documentation addresses. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0] ?? '';
  const family = isIP(bare);
  if (family === 4) return blocked.check(bare, 'ipv4');
  if (family === 6) {
    const v4 = embeddedV4(bare);
    if (v4) return blocked.check(v4, 'ipv4');
    return blocked.check(bare, 'ipv6');
  }
  return true; // not an address at all: refuse
}

export class OutboundUrlError extends Error {}

export interface OutboundPolicy {
  allowPrivate: boolean;
  /** Name resolution, replaceable in tests; default the system resolver. */
  lookup?: (host: string) => Promise<LookupAddress[]>;
}

const systemLookup = (host: string) =>
  new Promise<LookupAddress[]>((resolve, reject) =>
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => (err ? reject(err) : resolve(addresses))),
  );

/**
 * Accepts an absolute http(s) URL whose host is not private. Numeric host forms (2130706433,
 * 0x7f.1, [::ffff:127.0.0.1]) are normalised by the URL parser first; a hostname must resolve only
 * to public addresses. A literal public address is accepted without DNS.
 * @throws OutboundUrlError with the reason.
 */
export async function checkOutboundUrl(raw: string, policy: OutboundPolicy): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundUrlError('must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundUrlError('must use http or https');
  if (url.username || url.password) throw new OutboundUrlError('must not contain credentials');
  if (policy.allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (isPrivateAddress(host)) throw new OutboundUrlError('points to a private or reserved address');
    return url;
  }
  if (host === 'localhost' || host.endsWith('.localhost')) throw new OutboundUrlError('points to a private address');
  let addresses: LookupAddress[];
  try {
    addresses = await (policy.lookup ?? systemLookup)(host);
  } catch {
    throw new OutboundUrlError('host name does not resolve');
  }
  if (addresses.length === 0 || addresses.some((a) => isPrivateAddress(a.address))) {
    throw new OutboundUrlError('resolves to a private or reserved address');
  }
  return url;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * An undici dispatcher whose connections resolve names through a guard: a private answer fails
 * the connection, whatever the name resolved to when the URL was accepted. Redirects are never
 * followed (undici follows none without an interceptor).
 */
export function createOutboundDispatcher(policy: OutboundPolicy & { timeoutMs: number }): Dispatcher {
  const guardedLookup = (host: string, options: object, callback: LookupCallback) => {
    (policy.lookup ?? systemLookup)(host).then(
      (addresses) => {
        const usable = policy.allowPrivate ? addresses : addresses.filter((a) => !isPrivateAddress(a.address));
        if (usable.length === 0) {
          const err: NodeJS.ErrnoException = new Error(`${host} resolves to a private or reserved address`);
          err.code = 'EPRIVATEADDRESS';
          return callback(err, []);
        }
        const all = (options as { all?: boolean }).all;
        if (all) return callback(null, usable);
        const first = usable[0] as LookupAddress;
        callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };
  return new Agent({
    connect: { lookup: guardedLookup as never, timeout: policy.timeoutMs },
    headersTimeout: policy.timeoutMs,
    bodyTimeout: policy.timeoutMs,
    connections: 64,
  });
}

/**
 * The guarded dispatcher of `createOutboundDispatcher`, shared by every account through per-account
 * lanes (lib/outbound-fair.ts): one account holds at most `perAccount` of its connections, and a
 * request's deadline ends it whether or not it ever got a socket. Use `forAccount(account)` as
 * undici's `dispatcher` for each request.
 */
export function createFairOutboundDispatcher(
  policy: OutboundPolicy & { timeoutMs: number; perAccount: number },
): FairOutbound {
  return createFairOutbound({ dispatcher: createOutboundDispatcher(policy), perAccount: policy.perAccount });
}
