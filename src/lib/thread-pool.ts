import { DEFAULT_HASH_CONCURRENCY } from '../modules/accounts/passwords.js';

/**
 * libuv's thread pool runs argon2, the SQLite WAL `fdatasync` every acknowledged write waits for,
 * and `dns.lookup` for outbound calls. Its default of 4 threads is exactly what password hashing
 * may hold at once on a 2-core machine, so a login flood would queue every commit behind hashes.
 * Sized here to the hashing bound plus the default 4, so those always have threads of their own.
 * Only effective before the pool's first use: the command's entry imports this module first.
 * An explicit UV_THREADPOOL_SIZE is kept.
 */
export const THREAD_POOL_SIZE = DEFAULT_HASH_CONCURRENCY + 4;

process.env.UV_THREADPOOL_SIZE ??= String(THREAD_POOL_SIZE);
