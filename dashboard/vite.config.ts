import { fileURLToPath } from 'node:url';
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

// The dashboard is built into dist/dashboard and served by the API server at /dashboard/.
export default defineConfig({
  root: here,
  base: '/dashboard/',
  // Outside node_modules, as Vitest's (vitest.config.ts says why).
  cacheDir: fileURLToPath(new URL('../.cache/vite', import.meta.url)),
  plugins: [preact()],
  build: {
    outDir: fileURLToPath(new URL('../dist/dashboard', import.meta.url)),
    emptyOutDir: true,
    // The page's CSP forbids inline scripts and styles: every asset is a file.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
    sourcemap: false,
  },
  server: {
    // `npm run dev:dashboard` proxies the API to a server on :8080.
    proxy: Object.fromEntries(
      ['/auth', '/agent', '/v1', '/health', '/openapi.json', '/telemetry', '/user', '/workspaces', '/invitations'].map(
        (p) => [p, 'http://127.0.0.1:8080'],
      ),
    ),
  },
});
