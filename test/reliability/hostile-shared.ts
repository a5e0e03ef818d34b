/**
 * Shared by the hostile-input test files (issue 8): the answer checks (status class and error
 * envelope of each service) and the one `hostile-input` figures section both files contribute to.
 *
 * The two files run in parallel, so each writes its own part (`hostile-input.<part>.part`, which
 * readFigures ignores) and then the area from every part present; whichever finishes last writes
 * the complete section. A part left from an earlier run says when it was measured.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Figures, RELIABILITY_DIR, writeFigures } from './figures.js';

export interface Answer {
  status: number;
  contentType: string;
  text: string;
  /** The route's path (Anthropic-format routes answer errors in Anthropic's shape). */
  path?: string;
}

const json = (text: string): any => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/**
 * What is wrong with an answer to hostile input, or null: it must be a 2xx that is a real success
 * (a parseable body of its declared type) or a 4xx in the service's error envelope, as JSON.
 */
export function answerProblem(a: Answer, service: 'gateway' | 'media'): string | null {
  const head = `${a.status} ${a.text.slice(0, 200)}`;
  if (a.status >= 500) return `server error: ${head}`;
  if (a.status >= 200 && a.status < 300) {
    if (a.status === 204 || a.contentType.startsWith('text/event-stream')) return null;
    // JSON Lines; Anthropic's results download comes as application/binary.
    if (a.contentType.startsWith('application/jsonl') || a.contentType.startsWith('application/binary'))
      return a.text.split('\n').every((l) => l === '' || json(l) !== undefined) ? null : `bad JSONL: ${head}`;
    // Speech answers audio; a transcription asked for text, srt or vtt answers it as text.
    if (a.contentType.startsWith('audio/')) return a.text.length > 0 ? null : `empty audio: ${head}`;
    if (a.contentType.startsWith('text/plain') && /\/audio\/transcriptions$/.test(a.path ?? '')) return null;
    // A video job's content is the stored file (a video; the fuzz's fixed generator stores a PNG).
    if (/\/videos\/[^/]+\/content$/.test(a.path ?? '') && /^(video|image)\//.test(a.contentType))
      return a.text.length > 0 ? null : `empty video: ${head}`;
    if (!a.contentType.startsWith('application/json')) return `2xx as ${a.contentType}: ${head}`;
    return json(a.text) === undefined ? `2xx with unparseable JSON: ${head}` : null;
  }
  if (a.status < 400) return `unexpected status: ${head}`;
  if (!a.contentType.startsWith('application/json')) return `4xx as ${a.contentType || 'no type'}: ${head}`;
  const body = json(a.text);
  const e = body?.error;
  // The media service's own routes answer its envelope; its OpenRouter-shaped ones (/api/v1/…) the standard one.
  if (service === 'media' && !(a.path ?? '').startsWith('/api/v1/')) {
    if (body?.success !== false || typeof body.message !== 'string' || typeof e?.code !== 'string')
      return `media envelope: ${head}`;
    return null;
  }
  // Anthropic-format routes answer Anthropic's error object.
  if (body?.type === 'error' && /\/messages(\/|\?|$)/.test(a.path ?? '')) {
    return typeof e?.type === 'string' && typeof e.message === 'string' && e.message !== ''
      ? null
      : `Anthropic error object: ${head}`;
  }
  if (!e || typeof e.message !== 'string' || e.message === '') return `envelope: ${head}`;
  if (!(e.code === a.status || (typeof e.code === 'string' && e.code !== '')))
    return `envelope code: ${head}`;
  return null;
}

/** Names of the standard prototypes' own properties, to compare before and after the run. */
export function prototypeSnapshot(): string {
  const protos = {
    Object: Object.prototype,
    Array: Array.prototype,
    Function: Function.prototype,
    String: String.prototype,
  };
  return JSON.stringify(Object.entries(protos).map(([n, p]) => [n, Reflect.ownKeys(p).map(String).sort()]));
}

/** Whether a plain object, an array or a function sees a property a polluting payload names. */
export function polluted(): string[] {
  const probes = ['polluted', 'isAdmin', 'gatehouse_polluted'];
  const seen: string[] = [];
  for (const p of probes)
    for (const [name, o] of [
      ['{}', {}],
      ['[]', []],
      ['fn', () => {}],
      ['Object.create', Object.create(Object.prototype)],
    ] as const)
      if ((o as Record<string, unknown>)[p] !== undefined) seen.push(`${name}.${p}`);
  return seen;
}

const FIGURES_DIR = join(RELIABILITY_DIR, 'figures');

interface Part {
  part: string;
  at: string;
  title: string;
  rows: Figures['rows'];
  notes: string[];
}

/** Writes this file's part, then the `hostile-input` area from every part present. */
export function writeHostileFigures(part: 'properties' | 'http', p: Omit<Part, 'part' | 'at'>): void {
  const mine: Part = { part, at: new Date().toISOString(), ...p };
  mkdirSync(FIGURES_DIR, { recursive: true });
  writeFileSync(join(FIGURES_DIR, `hostile-input.${part}.part`), JSON.stringify(mine));
  const parts = readdirSync(FIGURES_DIR)
    .filter((f) => f.startsWith('hostile-input.') && f.endsWith('.part'))
    .map((f) => JSON.parse(readFileSync(join(FIGURES_DIR, f), 'utf8')) as Part)
    .sort((a, b) => (a.part === 'properties' ? -1 : b.part === 'properties' ? 1 : 0));
  const stale = parts.filter((x) => Date.parse(mine.at) - Date.parse(x.at) > 30 * 60_000);
  writeFigures({
    area: 'hostile-input',
    title: parts.map((x) => x.title).join('; '),
    rows: parts.flatMap((x) => x.rows),
    notes: [
      ...parts.flatMap((x) => x.notes),
      ...stale.map(
        (x) => `The ${x.part} figures are from an earlier run (${x.at.slice(0, 16).replace('T', ' ')} UTC).`,
      ),
    ],
  });
}
