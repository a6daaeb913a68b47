// Rewrites the README's configuration table from src/config.ts (the only description of settings).
import { readFileSync, writeFileSync } from 'node:fs';
import { renderConfigTable } from '../src/config.js';

const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';
const readme = readFileSync('README.md', 'utf8');
const from = readme.indexOf(START);
const to = readme.indexOf(END);
if (from < 0 || to < from) throw new Error(`README.md has no ${START} … ${END} section`);
writeFileSync('README.md', `${readme.slice(0, from + START.length)}\n${renderConfigTable()}\n${readme.slice(to)}`);
