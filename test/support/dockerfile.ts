import { readFileSync } from 'node:fs';

/** One instruction of a Dockerfile: `RUN`, `ENV` … with its arguments (continuation lines joined). */
export interface Instruction {
  op: string;
  args: string;
}

export interface Stage {
  /** The `AS` name (or the stage's index). */
  name: string;
  /** The image it starts from, as written (`${NODE_IMAGE}`, `build` …). */
  from: string;
  instructions: Instruction[];
}

/**
 * The stages of a Dockerfile, as far as the deployment tests need them: comments dropped,
 * backslash-continued lines joined, instructions grouped under their `FROM`. `ARG`s before the first
 * `FROM` are the stage `global`.
 */
export function parseDockerfile(path: string): Stage[] {
  const lines = readFileSync(path, 'utf8').split('\n');
  const logical: string[] = [];
  let current = '';
  for (const raw of lines) {
    if (!current && /^\s*(#|$)/.test(raw)) continue;
    if (current && /^\s*#/.test(raw)) continue; // comments inside a continued instruction
    const line = raw.replace(/\s+$/, '');
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push((current + line).trim());
    current = '';
  }
  const stages: Stage[] = [{ name: 'global', from: '', instructions: [] }];
  for (const l of logical) {
    const m = /^(\w+)\s+([\s\S]*)$/.exec(l);
    if (!m?.[1] || m[2] === undefined) throw new Error(`not an instruction: ${l}`);
    const op = m[1].toUpperCase();
    const args = m[2].trim();
    if (op === 'FROM') {
      const f = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!f?.[1]) throw new Error(`bad FROM: ${l}`);
      stages.push({ name: f[2] ?? String(stages.length - 1), from: f[1], instructions: [] });
      continue;
    }
    stages[stages.length - 1]?.instructions.push({ op, args });
  }
  return stages;
}

export function stage(stages: Stage[], name: string): Stage {
  const s = stages.find((x) => x.name === name);
  if (!s) throw new Error(`Dockerfile has no stage ${name}`);
  return s;
}

/** The arguments of every `op` instruction of a stage. */
export const argsOf = (s: Stage, op: string) => s.instructions.filter((i) => i.op === op).map((i) => i.args);

/** The arguments of a stage's one `op` instruction (ENTRYPOINT, CMD …); throws unless there is exactly one. */
export function onlyArgs(s: Stage, op: string): string {
  const all = argsOf(s, op);
  if (all.length !== 1 || all[0] === undefined) throw new Error(`stage ${s.name} has ${all.length} ${op}`);
  return all[0];
}

/** `ENV A=1 B=2` (and the legacy `ENV A 1`) of a stage, in order. */
export function envOf(s: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const args of argsOf(s, 'ENV')) {
    if (!args.includes('=')) {
      const [k = '', ...v] = args.split(/\s+/);
      env[k] = v.join(' ');
      continue;
    }
    for (const [, k = '', v = ''] of args.matchAll(/(\w+)=("(?:[^"\\]|\\.)*"|\S*)/g))
      env[k] = v.startsWith('"') ? JSON.parse(v) : v;
  }
  return env;
}

/** An exec-form instruction (`CMD ["a", "b"]`): its argument vector. Shell form is refused. */
export function execForm(args: string): string[] {
  const json = args.replace(/^(--\S+\s+)*CMD\s+/, '');
  const v = JSON.parse(json) as unknown;
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new Error(`not exec form: ${args}`);
  return v;
}
