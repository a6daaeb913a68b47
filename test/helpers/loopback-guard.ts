import dns, { type LookupAddress } from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';
import net, { BlockList, isIP } from 'node:net';
import { afterEach } from 'vitest';

/*
 * Set up before every test file: no test sends a packet outside the loopback range. A connection
 * to an address outside 127.0.0.0/8 and ::1, or a name lookup other than `localhost` through the
 * system resolver (which would ask a DNS server), is refused before anything leaves the process,
 * and the test that caused it fails (the code under test may swallow the refusal, as an outbound
 * call that fails is often only recorded). Tests that need a "public" answer inject their own
 * resolver (`lookup`) that maps the name to 127.0.0.1, or assert a refusal before connect.
 */

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)?.[1];
  if (mapped) return loopback.check(mapped, 'ipv4');
  const family = isIP(bare);
  if (family === 4) return loopback.check(bare, 'ipv4');
  if (family === 6) return loopback.check(bare, 'ipv6');
  return false;
}

const attempts: string[] = [];

function refuse(what: string): NodeJS.ErrnoException {
  attempts.push(what);
  const err: NodeJS.ErrnoException = new Error(`test network guard: refused ${what} (tests stay on loopback)`);
  err.code = 'ETESTNETWORK';
  return err;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

const systemLookup = dns.lookup;
/** The system resolver for `localhost` and address literals only: no query ever leaves the host. */
function guardedLookup(host: string, ...rest: unknown[]) {
  const callback = rest.at(-1) as LookupCallback;
  const options = (rest.length > 1 ? rest[0] : {}) as dns.LookupOptions | number;
  if (host === 'localhost' || isIP(host)) {
    return (systemLookup as (...args: unknown[]) => void)(host, ...rest);
  }
  const all = typeof options === 'object' && options?.all;
  process.nextTick(() => callback(refuse(`a DNS lookup of ${host}`), all ? [] : ''));
}

/** The address a socket is about to connect to, checked before the connection is attempted. */
function checkedConnect(this: net.Socket, ...args: unknown[]) {
  const first = args[0];
  const options = (Array.isArray(first) ? first[0] : first) as net.NetConnectOpts | number | string | undefined;
  let host: string | undefined;
  if (typeof options === 'object' && options !== null) {
    if ('path' in options && options.path) return original.apply(this, args as never);
    host = (options as net.TcpNetConnectOpts).host ?? 'localhost';
    const chosen = (options as net.TcpNetConnectOpts).lookup;
    if (chosen && !isIP(host)) {
      // A resolver of the test's own (the SSRF tests'): check what it answers, not the name.
      (options as net.TcpNetConnectOpts).lookup = ((name: string, opts: object, callback: LookupCallback) =>
        chosen(name, opts as dns.LookupOptions, (err, address, family) => {
          if (err) return callback(err, address, family);
          const list = Array.isArray(address) ? address.map((a) => a.address) : [address];
          const outside = list.find((a) => !isLoopback(a));
          if (outside)
            return callback(refuse(`a connection to ${outside} (${name})`), Array.isArray(address) ? [] : '');
          callback(null, address, family);
        })) as never;
      return original.apply(this, args as never);
    }
  } else if (typeof options === 'number' || typeof options === 'string') {
    const second = args[1];
    host = typeof second === 'string' ? second : 'localhost';
  }
  if (host !== undefined && host !== 'localhost' && !isLoopback(host) && isIP(host)) {
    const err = refuse(`a connection to ${host}`);
    process.nextTick(() => this.destroy(err));
    return this;
  }
  return original.apply(this, args as never);
}

const systemPromiseLookup = dns.promises.lookup;
/** The promise form, likewise. */
function guardedPromiseLookup(host: string, ...rest: unknown[]) {
  if (host === 'localhost' || isIP(host))
    return (systemPromiseLookup as (...args: unknown[]) => unknown)(host, ...rest);
  return Promise.reject(refuse(`a DNS lookup of ${host}`));
}

const original = net.Socket.prototype.connect;
net.Socket.prototype.connect = checkedConnect as typeof net.Socket.prototype.connect;
dns.lookup = guardedLookup as typeof dns.lookup;
dns.promises.lookup = guardedPromiseLookup as typeof dns.promises.lookup;
syncBuiltinESMExports();

/** The refusals recorded since the last look, taken (for the guard's own tests). */
export function takeRefusals(): string[] {
  return attempts.splice(0);
}

afterEach(() => {
  if (attempts.length === 0) return;
  const seen = attempts.splice(0);
  throw new Error(`this test tried to leave loopback: ${seen.join('; ')}`);
});
