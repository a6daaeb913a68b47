#!/usr/bin/env node
// Validates deploy/kubernetes/ offline, twice over:
//  1. each object against the Kubernetes API schemas that the kubernetes-models package carries
//     (types, required fields, formats);
//  2. each object as a typed TypeScript literal against the same package's interfaces, so that a field
//     the API does not know (a typo such as `readinesProbe`) fails as it does under kubectl's strict
//     field validation; the JSON schemas let unknown fields through.
// The kustomization must list every manifest except the example Secret, and name the image the
// Deployment uses. Prints one line per object; exits 1 with the problems otherwise.
//
//   node scripts/container/validate-deploy.mjs [repository root] [where its packages are installed]
//
// Also exported for the test suite (test/deploy/).
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const KINDS = {
  'v1/ConfigMap': ['kubernetes-models/v1/ConfigMap', 'ConfigMap', 'IConfigMap'],
  'v1/Secret': ['kubernetes-models/v1/Secret', 'Secret', 'ISecret'],
  'v1/Service': ['kubernetes-models/v1/Service', 'Service', 'IService'],
  'apps/v1/Deployment': ['kubernetes-models/apps/v1/Deployment', 'Deployment', 'IDeployment'],
  'policy/v1/PodDisruptionBudget': ['kubernetes-models/policy/v1/PodDisruptionBudget', 'PodDisruptionBudget', 'IPodDisruptionBudget'],
  'autoscaling/v2/HorizontalPodAutoscaler': [
    'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
    'HorizontalPodAutoscaler',
    'IHorizontalPodAutoscaler',
  ],
};
const KUSTOMIZATION = 'kustomization.yaml';

/** Every manifest file's objects: [{file, object}]. */
export function readManifests(root, require) {
  const { parseAllDocuments } = require('yaml');
  const dir = path.join(root, 'deploy/kubernetes');
  const out = [];
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0].message}`);
      const object = doc.toJS();
      if (object !== null) out.push({ file, object });
    }
  }
  return out;
}

function schemaProblems(entries, require) {
  const problems = [];
  for (const { file, object } of entries) {
    if (file === KUSTOMIZATION) continue;
    const kind = KINDS[`${object.apiVersion}/${object.kind}`];
    if (!kind) {
      problems.push(`${file}: ${object.apiVersion} ${object.kind} is not a kind this check knows`);
      continue;
    }
    const Model = require(kind[0])[kind[1]];
    try {
      new Model(object).validate();
    } catch (err) {
      problems.push(`${file}: ${object.kind} ${object.metadata?.name}: ${err.message}`);
    }
  }
  return problems;
}

/** Type-checks each object as a literal of its kubernetes-models interface (excess property checks). */
function typeProblems(entries, require, modules) {
  const ts = require('typescript');
  const known = entries.filter(({ file, object }) => file !== KUSTOMIZATION && KINDS[`${object.apiVersion}/${object.kind}`]);
  const lines = known.map(({ object }, i) => {
    const [module, , iface] = KINDS[`${object.apiVersion}/${object.kind}`];
    return `import type { ${iface} as T${i} } from '${module}';\nexport const m${i}: T${i} = ${JSON.stringify(object)};`;
  });
  const fileName = path.join(modules, '__deploy_manifests__.ts');
  const options = { strict: true, noEmit: true, skipLibCheck: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [] };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  host.readFile = (f) => (f === fileName ? lines.join('\n') : readFile(f));
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (f) => f === fileName || fileExists(f);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (f, v) => (f === fileName ? ts.createSourceFile(f, lines.join('\n'), v) : getSourceFile(f, v));
  const program = ts.createProgram([fileName], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const at = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    const entry = known[Math.floor(at / 2)];
    const where = entry ? `${entry.file}: ${entry.object.kind} ${entry.object.metadata?.name}` : 'manifests';
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

function kustomizationProblems(entries) {
  const kustomization = entries.find((e) => e.file === KUSTOMIZATION)?.object;
  if (!kustomization) return [`${KUSTOMIZATION} is missing`];
  const files = [...new Set(entries.map((e) => e.file))].filter((f) => f !== KUSTOMIZATION && !f.includes('example'));
  const listed = kustomization.resources ?? [];
  const problems = [];
  for (const f of files) if (!listed.includes(f)) problems.push(`${KUSTOMIZATION} does not list ${f}`);
  for (const f of listed) if (!files.includes(f)) problems.push(`${KUSTOMIZATION} lists ${f}, which is not a manifest here`);
  const deployment = entries.find((e) => e.object.kind === 'Deployment')?.object;
  const image = deployment?.spec?.template?.spec?.containers?.[0]?.image ?? '';
  const named = (kustomization.images ?? []).find((i) => image.split(':')[0] === i.name);
  if (!named) problems.push(`${KUSTOMIZATION} does not name the Deployment's image ${image}`);
  return problems;
}

/**
 * All problems with deploy/kubernetes/ (an empty list when it is valid), and what was checked.
 * `modules` is the directory whose node_modules holds kubernetes-models, yaml and typescript.
 */
export function validateDeploy(root, modules = root) {
  const require = createRequire(path.join(modules, 'package.json'));
  const entries = readManifests(root, require);
  const problems = [
    ...schemaProblems(entries, require),
    ...typeProblems(entries, require, modules),
    ...kustomizationProblems(entries),
  ];
  return { problems, checked: entries.map(({ file, object }) => `${file}: ${object.kind} ${object.metadata?.name ?? ''}`.trim()) };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '../..'));
  const { problems, checked } = validateDeploy(root, path.resolve(process.argv[3] ?? root));
  for (const line of checked) process.stdout.write(`checked ${line}\n`);
  for (const line of problems) process.stderr.write(`invalid ${line}\n`);
  process.exit(problems.length === 0 ? 0 : 1);
}
