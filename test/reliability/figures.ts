/**
 * The reliability suite's figures (issue 8): each area writes what it measured — requests under
 * fault, overspend observed, inputs tried, crashes found — as one fragment, and the suite's global
 * teardown (global-setup.ts) composes every fragment into `reliability/results.md`.
 *
 * A fragment is `reliability/figures/<area>.json` (not committed; results.md is). Writing the same
 * area twice in one run replaces it, so an area that runs several test cases should collect its
 * rows and write once (afterAll).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const RELIABILITY_DIR = resolve(import.meta.dirname, '../../reliability');
const FIGURES_DIR = join(RELIABILITY_DIR, 'figures');

/** The areas in the order results.md shows them. */
export const AREAS = ['multi-node', 'faults', 'hostile-input', 'authorization', 'secrets', 'soak'] as const;
export type Area = (typeof AREAS)[number];

export interface Figures {
  area: Area;
  /** One line: what was exercised. */
  title: string;
  /** Label → value, shown as a two-column table (numbers as measured, units in the label). */
  rows: [label: string, value: string | number][];
  /** Free sentences under the table: tolerances, bounds, what a failure would look like. */
  notes?: string[];
}

interface Stored extends Figures {
  at: string;
}

export function writeFigures(f: Figures): void {
  mkdirSync(FIGURES_DIR, { recursive: true });
  const stored: Stored = { ...f, at: new Date().toISOString() };
  writeFileSync(join(FIGURES_DIR, `${f.area}.json`), `${JSON.stringify(stored, null, 2)}\n`);
}

export function readFigures(): Stored[] {
  let files: string[] = [];
  try {
    files = readdirSync(FIGURES_DIR).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  const all = files.map((f) => JSON.parse(readFileSync(join(FIGURES_DIR, f), 'utf8')) as Stored);
  return all.sort((a, b) => AREAS.indexOf(a.area) - AREAS.indexOf(b.area));
}

/** results.md from every fragment present (each section says when it was measured). */
export function composeResults(figures: Stored[] = readFigures()): string {
  const out = [
    '# Reliability figures',
    '',
    'Written by the test suite (`npm test`; `npm run test:soak` adds the soak section) from what',
    'each area measured in its last run. Regenerated on every run; see the README for a summary.',
    '',
  ];
  for (const f of figures) {
    out.push(`## ${f.area}`, '', `${f.title} _(measured ${f.at.slice(0, 16).replace('T', ' ')} UTC)_`, '');
    out.push('| figure | value |', '|---|---|');
    for (const [label, value] of f.rows) out.push(`| ${label} | ${value} |`);
    out.push('');
    for (const n of f.notes ?? []) out.push(`- ${n}`);
    if (f.notes?.length) out.push('');
  }
  return out.join('\n');
}

export function writeResults(): void {
  const figures = readFigures();
  if (figures.length === 0) return;
  writeFileSync(join(RELIABILITY_DIR, 'results.md'), composeResults(figures));
}
