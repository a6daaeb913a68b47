import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
// @ts-expect-error: a plain ES module script without declarations
import { validateDeploy } from '../../scripts/container/validate-deploy.mjs';
import { ROOT } from '../helpers/cli-process.js';

// What the image, compose.yaml and deploy/kubernetes/ promise (docs/deployment.md), read from the
// files themselves so that they cannot drift from package.json or from each other. Building and running
// them needs a Docker engine: scripts/check-container.sh does that.

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const pkg = JSON.parse(read('package.json')) as { version: string; license: string; scripts: { start: string } };

/** The Dockerfile's instructions, continuation lines joined, comments left out. */
function instructions(): string[] {
  return read('Dockerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

type Manifest = { kind: string; metadata: { name: string }; spec?: unknown; data?: Record<string, string> };
// biome-ignore lint/suspicious/noExplicitAny: manifests are read as plain YAML data
type Any = any;

function manifests(): Manifest[] {
  const dir = 'deploy/kubernetes';
  const files = [
    'configmap.yaml',
    'deployment.yaml',
    'service.yaml',
    'poddisruptionbudget.yaml',
    'horizontalpodautoscaler.yaml',
  ];
  return files.flatMap((f) => parseAllDocuments(read(`${dir}/${f}`)).map((d) => d.toJS() as Manifest));
}

describe('the Dockerfile', () => {
  const lines = instructions();
  it('builds both stages on BASE_IMAGE, node:22-bookworm-slim by default', () => {
    expect(lines[0]).toBe('ARG BASE_IMAGE=node:22-bookworm-slim');
    expect(lines.filter((l) => l.startsWith('FROM '))).toEqual([`FROM \${BASE_IMAGE} AS build`, `FROM \${BASE_IMAGE}`]);
  });

  it("labels the image with package.json's version and license", () => {
    expect(lines).toContain(`ARG TASKHOOK_VERSION=${pkg.version}`);
    const label = lines.find((l) => l.startsWith('LABEL ')) ?? '';
    expect(label).toContain(`org.opencontainers.image.version="\${TASKHOOK_VERSION}"`);
    expect(label).toContain(`org.opencontainers.image.licenses="${pkg.license}"`);
    expect(label).toContain(`org.opencontainers.image.source="\${SOURCE_URL}"`);
  });

  it('runs Node.js as PID 1 with the flags of npm start, as the node user, writing only to /data', () => {
    const entrypoint = JSON.parse(lines.find((l) => l.startsWith('ENTRYPOINT '))?.slice(11) ?? '[]');
    const cmd = JSON.parse(lines.find((l) => l.startsWith('CMD '))?.slice(4) ?? '[]');
    expect([...entrypoint, ...cmd].join(' ')).toBe(pkg.scripts.start.replace('dist/', '/app/dist/'));
    expect(lines).toContain('USER node');
    expect(lines).toContain('VOLUME /data');
    expect(lines).toContain('EXPOSE 8080');
    expect(lines.find((l) => l.startsWith('ENV NODE_ENV'))).toContain('TASKHOOK_DATA_DIR=/data');
    const health = lines.find((l) => l.startsWith('HEALTHCHECK ')) ?? '';
    expect(health).toMatch(/CMD \["node", "-e", ".*\/health/);
  });

  it('sends nothing but what the build reads into the context', () => {
    const ignore = read('.dockerignore').split('\n');
    expect(ignore).toContain('*');
    const allowed = ignore.filter((l) => l.startsWith('!'));
    expect(allowed).not.toContain('!test/');
    expect(allowed.some((l) => l.includes('.git') || l.includes('data'))).toBe(false);
  });
});

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml')) as Any;
  const secrets = ['TASKHOOK_JWT_SECRET', 'TASKHOOK_ENCRYPTION_KEY', 'POSTGRES_PASSWORD'];

  it('publishes only taskhook, on 127.0.0.1', () => {
    expect(compose.services.taskhook.ports).toEqual([`127.0.0.1:\${TASKHOOK_PORT:-8080}:8080`]);
    expect(compose.services.postgres.ports).toBeUndefined();
    expect(compose.services.redis.ports).toBeUndefined();
  });

  it('starts taskhook once PostgreSQL and Redis are healthy, and keeps the database in a named volume', () => {
    expect(compose.services.taskhook.depends_on).toEqual({
      postgres: { condition: 'service_healthy' },
      redis: { condition: 'service_healthy' },
    });
    expect(compose.services.postgres.image).toMatch(/^postgres:\d+$/);
    expect(compose.services.redis.image).toMatch(/^redis:\d+$/);
    expect(compose.services.postgres.healthcheck.test).toBeDefined();
    expect(compose.services.redis.healthcheck.test).toBeDefined();
    expect(compose.services.postgres.volumes).toEqual(['postgres-data:/var/lib/postgresql/data']);
    expect(Object.keys(compose.volumes)).toEqual(['postgres-data']);
  });

  it('holds no secret, refuses to start without the three from .env, and composes the addresses', () => {
    const env = compose.services.taskhook.environment;
    expect(env.DATABASE_URL).toMatch(/^postgres:\/\/taskhook:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/taskhook$/);
    expect(env.REDIS_URL).toBe('redis://redis:6379');
    expect(env.TASKHOOK_JWT_SECRET).toMatch(/^\$\{TASKHOOK_JWT_SECRET:\?[^}]+\}$/);
    expect(env.TASKHOOK_ENCRYPTION_KEY).toMatch(/^\$\{TASKHOOK_ENCRYPTION_KEY:\?[^}]+\}$/);
    expect(compose.services.postgres.environment.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?[^}]+\}$/);
    const example = read('.env.example')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l));
    expect(example).toEqual(secrets.map((name) => `${name}=`));
  });

  it('lets the drain finish: the stop grace is longer than the shutdown timeout', () => {
    expect(compose.services.taskhook.stop_grace_period).toBe('40s');
    expect(compose.services.taskhook.read_only).toBe(true);
  });
});

describe('deploy/kubernetes/', () => {
  it('is valid against the Kubernetes API schemas, unknown fields included', () => {
    const { problems, checked } = validateDeploy(ROOT) as { problems: string[]; checked: string[] };
    expect(problems).toEqual([]);
    expect(checked.length).toBeGreaterThanOrEqual(7);
  }, 120_000);

  it("runs package.json's version, two replicas, locked down, with secrets by reference", () => {
    const all = manifests();
    const deployment = all.find((m) => m.kind === 'Deployment') as Any;
    const pod = deployment.spec.template.spec;
    const [container] = pod.containers;
    expect(container.image).toBe(`taskhook:${pkg.version}`);
    expect(parse(read('deploy/kubernetes/kustomization.yaml')).images).toEqual([
      { name: 'taskhook', newTag: pkg.version },
    ]);
    expect(deployment.spec.replicas).toBe(2);
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.securityContext.runAsUser).not.toBe(0);
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      expect(container[probe].httpGet.path).toBe('/health');
    }
    const fromSecret = container.env.filter((e: Any) => e.valueFrom?.secretKeyRef?.name === 'taskhook-secrets');
    expect(fromSecret.map((e: Any) => e.name).sort()).toEqual([
      'DATABASE_URL',
      'REDIS_URL',
      'TASKHOOK_ENCRYPTION_KEY',
      'TASKHOOK_JWT_SECRET',
    ]);
    expect(container.env.some((e: Any) => 'value' in e)).toBe(false);
    // preStop pause + the drain fit in the grace.
    const config = all.find((m) => m.kind === 'ConfigMap') as Manifest;
    const drainSeconds = Number(config.data?.TASKHOOK_SHUTDOWN_TIMEOUT_MS) / 1000;
    const pause = Number(container.lifecycle.preStop.exec.command[1]);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(pause + drainSeconds);
    const pdb = all.find((m) => m.kind === 'PodDisruptionBudget') as Any;
    expect(pdb.spec.minAvailable).toBe(1);
  });
});
