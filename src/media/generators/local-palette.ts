/**
 * The local generator's source of variety: everything it draws comes from a SHA-256 of the prompt
 * (same prompt → same picture, byte for byte), with one visible nod to the words: a colour word in
 * the prompt ("red", "ocean", "sunset" …) sets the base hue.
 */

import { createHash } from 'node:crypto';

/** A seeded pseudo-random source (sfc32), so drawing is reproducible from the digest. */
export interface Rng {
  /** In [0, 1). */
  next(): number;
  /** In [min, max). */
  range(min: number, max: number): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
}

export function promptDigest(prompt: string): Buffer {
  return createHash('sha256').update(prompt, 'utf8').digest();
}

/** A generator seeded from four words of the digest; `salt` gives independent streams. */
export function rngFrom(digest: Buffer, salt = 0): Rng {
  let a = digest.readUInt32LE(0) ^ salt;
  let b = digest.readUInt32LE(4);
  let c = digest.readUInt32LE(8);
  let d = digest.readUInt32LE(12) ^ Math.imul(salt, 0x9e3779b9);
  const next = (): number => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return {
    next,
    range: (min, max) => min + (max - min) * next(),
    int: (min, max) => min + Math.floor((max - min + 1) * next()),
  };
}

/** Colour words and the hue (degrees) they pull the palette to. */
const COLOUR_WORDS: Record<string, number> = {
  red: 0,
  crimson: 350,
  scarlet: 5,
  fire: 12,
  orange: 28,
  sunset: 22,
  autumn: 30,
  gold: 45,
  golden: 45,
  yellow: 55,
  desert: 40,
  lime: 90,
  green: 120,
  forest: 130,
  jungle: 125,
  teal: 175,
  cyan: 185,
  turquoise: 175,
  ocean: 200,
  sea: 200,
  sky: 205,
  blue: 220,
  navy: 230,
  night: 240,
  indigo: 255,
  violet: 270,
  purple: 280,
  magenta: 305,
  pink: 330,
  rose: 340,
};

/** The hue of the first colour word in the prompt, if any. */
export function colourWordHue(prompt: string): number | undefined {
  for (const word of prompt.toLowerCase().split(/[^a-z]+/)) {
    const hue = COLOUR_WORDS[word];
    if (hue !== undefined) return hue;
  }
  return undefined;
}

export function hslToHex(h: number, s: number, l: number): string {
  const hue = ((h % 360) + 360) % 360;
  const sat = Math.min(1, Math.max(0, s / 100));
  const lig = Math.min(1, Math.max(0, l / 100));
  const k = (n: number) => (n + hue / 30) % 12;
  const a = sat * Math.min(lig, 1 - lig);
  const f = (n: number) => lig - a * Math.max(-1, Math.min(k(n) - 3, 9 - k(n), 1));
  const hex = (x: number) =>
    Math.round(x * 255)
      .toString(16)
      .padStart(2, '0');
  return `#${hex(f(0))}${hex(f(8))}${hex(f(4))}`;
}

export interface Palette {
  /** Base hue in degrees. */
  hue: number;
  /** Three gradient stops for the background. */
  background: [string, string, string];
  /** Colours for the shapes. */
  accents: string[];
  /** A bright colour for the moving subject of a video. */
  highlight: string;
}

export function paletteFor(prompt: string, digest: Buffer): Palette {
  const rng = rngFrom(digest, 1);
  const hue = colourWordHue(prompt) ?? rng.range(0, 360);
  // Harmony: analogous, triadic or complementary, chosen by the digest.
  const spread = [30, 120, 180][rng.int(0, 2)] ?? 30;
  const sat = rng.range(55, 85);
  const background: [string, string, string] = [
    hslToHex(hue, sat, rng.range(18, 32)),
    hslToHex(hue + spread / 2, sat, rng.range(38, 52)),
    hslToHex(hue + spread, sat - 10, rng.range(55, 70)),
  ];
  const accents: string[] = [];
  for (let i = 0; i < 6; i++) {
    const h = hue + (i % 3) * (spread / 2) + rng.range(-15, 15);
    accents.push(hslToHex(h, rng.range(60, 95), rng.range(45, 75)));
  }
  return { hue, background, accents, highlight: hslToHex(hue + 180, 95, 70) };
}
