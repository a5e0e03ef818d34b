/**
 * Batch bodies for bench/batches.ts, generated on the fly: `{"endpoint":"/v1/chat/completions",
 * "completion_window":"24h","requests":[…]}` with ~1 KB chat requests (model `bench/fast`), each with
 * a different slice of a word corpus as its user text (mostly ASCII words, ~2 % non-ASCII text and JSON
 * escapes: \", \n, \u00e9, \\), a system prompt, max_tokens and temperature. Deterministic (seeded), so
 * every run sends the same bytes. Generated chunk by chunk (~64 KB), never held whole.
 */
import { Readable } from 'node:stream';

/** Deterministic PRNG (mulberry32), so every run sends the same bodies. */
export function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'the of and to in is that for it as with was on be by this are or from at an have which not but all can ' +
  'had were one their more will would about there been some if so what when up out into only other new time ' +
  'also could these two may first then do any like my now over such our even most made after well through ' +
  'back years where much your way down should because each just those people how too little state good very ' +
  'make world still own see work long get here between both life being under never day same another know ' +
  'while last might great old year off come since against go came right used take three invoice refund order ' +
  'shipment customer ticket account password login error timeout latency database migration deploy cluster ' +
  'summary translate explain classify extract sentiment review contract clause paragraph report quarterly'
).split(' ');
/** Already JSON-escaped tokens: non-ASCII text, escaped quotes, newlines and \u escapes. */
const SPECIAL = [
  'café',
  'naïve',
  'Zürich',
  '日本語の',
  'résumé',
  '—',
  '\\"quoted\\"',
  '\\n',
  '\\u00e9t\\u00e9',
  '\\\\path',
];

/** One long text of words (JSON-escaped already) and where each word starts. */
function makeCorpus(seed: number, words: number) {
  const rand = prng(seed);
  const parts: string[] = [];
  const starts = new Int32Array(words);
  let at = 0;
  for (let i = 0; i < words; i++) {
    starts[i] = at;
    const r = rand();
    let w =
      r < 0.02
        ? (SPECIAL[Math.floor(rand() * SPECIAL.length)] as string)
        : (WORDS[Math.floor(rand() * WORDS.length)] as string);
    if (rand() < 0.07) w += '.';
    parts.push(w);
    at += w.length + 1;
  }
  return { text: parts.join(' '), starts };
}

const CORPUS = makeCorpus(42, 1 << 17);

/** The JSON text of one request: ~1 KB, its user text a different slice of the corpus each time. */
export function itemJson(i: number, prefix: string, rand: () => number): string {
  const { text, starts } = CORPUS;
  const first = Math.floor(rand() * (starts.length - 400));
  const want = 600 + Math.floor(rand() * 320); // characters of user text
  const until = (starts[first] as number) + want;
  // Words take ~6 characters with their space: jump short of `want`, then walk to the first word past it.
  let last = Math.min(starts.length - 1, first + Math.floor(want / 8));
  while (last < starts.length - 1 && (starts[last] as number) < until) last++;
  const user = text.slice(starts[first], (starts[last] as number) - 1);
  return `{"custom_id":"${prefix}${i}","body":{"model":"bench/fast","messages":[{"role":"system","content":"You are a concise assistant for support queue ${i % 997}. Answer in one sentence."},{"role":"user","content":"${user}"}],"max_tokens":${16 + (i % 49)},"temperature":${(i % 10) / 10}}}`;
}

/** The body of a batch of `count` requests, in chunks of ~64 KB. */
export function* batchChunks(count: number, prefix: string, seed = 7): Generator<Buffer> {
  const rand = prng(seed);
  let parts: string[] = ['{"endpoint":"/v1/chat/completions","completion_window":"24h","requests":['];
  let size = parts[0]?.length ?? 0;
  for (let i = 0; i < count; i++) {
    const item = itemJson(i, prefix, rand);
    parts.push(i === 0 ? item : `,${item}`);
    size += item.length + 1;
    if (size >= 65_536) {
      yield Buffer.from(parts.join(''));
      parts = [];
      size = 0;
    }
  }
  parts.push(']}');
  yield Buffer.from(parts.join(''));
}

/** A Readable over the generator (backpressured: generated only as fast as the socket takes it). */
export function bodyStream(chunks: Generator<Buffer>, onLastChunk: () => void): Readable {
  return new Readable({
    highWaterMark: 256 * 1024,
    read() {
      for (;;) {
        const next = chunks.next();
        if (next.done) {
          onLastChunk();
          this.push(null);
          return;
        }
        if (!this.push(next.value)) return;
      }
    },
  });
}

export function bodySize(count: number, prefix: string): number {
  let bytes = 0;
  for (const c of batchChunks(count, prefix)) bytes += c.length;
  return bytes;
}
