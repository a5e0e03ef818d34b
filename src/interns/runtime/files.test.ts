import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDecision } from './agent.js';
import { FileRefusal, Workspace } from './files.js';

const base = mkdtempSync(join(tmpdir(), 'gatehouse-files-'));
const root = join(base, 'work');
mkdirSync(join(root, '.sessions'), { recursive: true });
writeFileSync(join(base, 'outside.txt'), 'secret');
writeFileSync(join(root, '.sessions', 's.json'), '{}');
symlinkSync(join(base, 'outside.txt'), join(root, 'link.txt'));
symlinkSync(base, join(root, 'up'));
const ws = new Workspace(root, ['.sessions', '.runtime.json']);
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('Workspace (the file tools’ confinement)', () => {
  it('reads and writes inside the working directory', async () => {
    expect(await ws.write('a/b/c.txt', 'hello')).toBe(5);
    expect(await ws.read('./a/b/../b/c.txt')).toBe('hello');
    expect(await ws.list()).toEqual(['a/', 'link.txt', 'up']);
    expect(await ws.read(join(root, 'a/b/c.txt'))).toBe('hello'); // an absolute path inside is fine
  });

  it('refuses traversal, absolute paths elsewhere, symlinks leading out and hidden entries', async () => {
    for (const p of ['../outside.txt', '/etc/passwd', 'a/../../outside.txt', 'link.txt', 'up/outside.txt'])
      await expect(ws.read(p), p).rejects.toBeInstanceOf(FileRefusal);
    await expect(ws.write('up/new.txt', 'x')).rejects.toBeInstanceOf(FileRefusal);
    await expect(ws.write('link.txt', 'x')).rejects.toBeInstanceOf(FileRefusal);
    await expect(ws.read('.sessions/s.json')).rejects.toThrow(/not accessible/);
    await expect(ws.list('.sessions')).rejects.toThrow(/not accessible/);
    await expect(ws.write('.runtime.json', '{}')).rejects.toThrow(/not accessible/);
    await expect(ws.read('nul\0byte')).rejects.toBeInstanceOf(FileRefusal);
  });
});

describe('parseDecision (permission answers)', () => {
  it('accepts the documented words in any case, and JSON naming one', () => {
    expect(parseDecision('allow')).toBe('allow_once');
    expect(parseDecision(' Allow_Once ')).toBe('allow_once');
    expect(parseDecision('allow-always')).toBe('allow_always');
    expect(parseDecision('REJECT')).toBe('reject');
    expect(parseDecision('deny')).toBe('reject');
    expect(parseDecision('{"decision":"allow_always"}')).toBe('allow_always');
    expect(parseDecision('{"option":"reject"}')).toBe('reject');
    expect(parseDecision('"allow_once"')).toBe('allow_once');
    expect(parseDecision('maybe later')).toBeNull();
  });
});
