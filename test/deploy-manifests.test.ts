/**
 * The deployment files hold together: the Kubernetes manifests (deploy/kubernetes), compose.yaml
 * with .env.example, and the Dockerfile — probes on the right paths and ports, non-root pods,
 * references (ConfigMap, Secret, volumes, selectors, images) that resolve, and every Gatehouse
 * variable they set is one Gatehouse reads (a renamed variable fails here), with values it accepts.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { adminTokenWeakness } from '../src/accounts/admin.token.js';
import { loadConfig } from '../src/config.js';
import { loadMediaConfig } from '../src/media/config.js';
import { argsOf, envOf, execForm, onlyArgs, parseDockerfile, stage } from './support/dockerfile.js';

const ROOT = resolve(import.meta.dirname, '..');
const K8S = join(ROOT, 'deploy/kubernetes');
const read = (p: string) => readFileSync(join(ROOT, p), 'utf8');

type Doc = any;

const kustomization = parseYaml(readFileSync(join(K8S, 'kustomization.yaml'), 'utf8')) as Doc;
const resources: Doc[] = (kustomization.resources as string[]).flatMap((file) =>
  parseAllDocuments(readFileSync(join(K8S, file), 'utf8')).map((d) => {
    if (d.errors.length) throw new Error(`${file}: ${d.errors[0]?.message}`);
    return { ...d.toJS(), __file: file };
  }),
);
const ofKind = (kind: string) => resources.filter((r) => r.kind === kind);
const named = (kind: string, name: string) => ofKind(kind).find((r) => r.metadata.name === name);
const deployment = (name: string) => {
  const d = named('Deployment', name);
  if (!d) throw new Error(`no Deployment ${name}`);
  return d;
};
const configMap = ofKind('ConfigMap')[0];
const secret = ofKind('Secret')[0];

const compose = parseYaml(read('compose.yaml'), { merge: true }) as Doc;
const envExample = Object.fromEntries(
  read('.env.example')
    .split('\n')
    .filter((l) => /^\w+=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
);
const dockerfile = parseDockerfile(join(ROOT, 'Dockerfile'));
const runtime = stage(dockerfile, 'runtime');
const imageEnv = envOf(runtime);

/** Gatehouse's commands: the `case '…':` of src/cli.ts. */
const cliCommands = [...read('src/cli.ts').matchAll(/case '([a-z ]+)':/g)].map((m) => m[1]);

/** Gatehouse's sources (not tests), where every variable it reads is named. */
const sources = (() => {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) out.push(readFileSync(p, 'utf8'));
    }
  };
  walk(join(ROOT, 'src'));
  return out.join('\n');
})();

/** Whether Gatehouse reads `name`: named in its sources, or a provider's `<PREFIX>_API_KEY`/`_BASE_URL`. */
function readByGatehouse(name: string): boolean {
  if (new RegExp(`\\b${name}\\b`).test(sources)) return true;
  const m = /^([A-Z0-9]+)_(API_KEY|BASE_URL)$/.exec(name);
  return !!m && new RegExp(`env: '${m[1]}'`).test(sources);
}

/** The variables a Gatehouse container gets from a Deployment: its ConfigMap's and Secret's keys, and `env`. */
const podEnv = (d: Doc): Record<string, string> => {
  const c = d.spec.template.spec.containers[0];
  const env: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, named('ConfigMap', from.configMapRef.name)?.data);
    if (from.secretRef) Object.assign(env, named('Secret', from.secretRef.name)?.stringData);
  }
  for (const e of c.env ?? []) env[e.name] = e.value ?? '';
  return env;
};

/** A probe's or Service's port (a name or a number) as the container's port number. */
function containerPort(d: Doc, port: string | number): number {
  const ports = d.spec.template.spec.containers[0].ports ?? [];
  const p = ports.find((x: Doc) => x.name === port || x.containerPort === port);
  if (!p) throw new Error(`${d.metadata.name} has no container port ${port}`);
  return p.containerPort;
}

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
if (!hasKubectl)
  console.warn('\n!!! kubectl not found: SKIPPING the kustomize build of deploy/kubernetes !!!\n');

describe('Kubernetes manifests', () => {
  it('are what kustomization.yaml lists, each parsing', () => {
    const files = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
    expect(
      ofKind('Deployment')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(['gatehouse-gateway', 'gatehouse-media', 'gatehouse-worker']);
    expect(
      ofKind('Service')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(['gatehouse', 'gatehouse-media']);
    expect(ofKind('ConfigMap')).toHaveLength(1);
    expect(ofKind('Secret')).toHaveLength(1);
  });

  it('run the Dockerfile image with a Gatehouse command, non-root on a read-only root', () => {
    const images = (kustomization.images as Doc[]).map((i) => i.name);
    for (const d of ofKind('Deployment')) {
      const pod = d.spec.template.spec;
      expect(pod.containers, d.metadata.name).toHaveLength(1);
      const c = pod.containers[0];
      expect(images).toContain(c.image);
      expect(c.args).toHaveLength(1);
      expect(cliCommands).toContain(c.args[0]);
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
      // The image's USER, so the data volume's ownership (fsGroup) matches.
      expect(argsOf(runtime, 'USER')).toEqual([
        `${pod.securityContext.runAsUser}:${pod.securityContext.runAsGroup}`,
      ]);
      expect(c.securityContext).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      expect(c.resources.requests.memory, d.metadata.name).toBeTruthy();
      expect(c.resources.limits.memory, d.metadata.name).toBeTruthy();
      // With a read-only root, what Gatehouse writes must be on volumes: the data directory, /tmp.
      const mounts = (c.volumeMounts as Doc[]).map((m) => m.mountPath);
      expect(mounts).toContain(podEnv(d).GATEHOUSE_DATA_DIR);
      expect(mounts).toContain('/tmp');
      const volumes = (pod.volumes as Doc[]).map((v) => v.name);
      for (const m of c.volumeMounts) expect(volumes).toContain(m.name);
      for (const v of pod.volumes)
        if (v.persistentVolumeClaim)
          expect(named('PersistentVolumeClaim', v.persistentVolumeClaim.claimName)).toBeTruthy();
      // Its pods are the ones it selects.
      expect(d.spec.template.metadata.labels).toMatchObject(d.spec.selector.matchLabels);
    }
  });

  it('take their settings from the ConfigMap and Secret that exist', () => {
    for (const d of ofKind('Deployment')) {
      const c = d.spec.template.spec.containers[0];
      const refs = c.envFrom as Doc[];
      expect(refs.map((r) => r.configMapRef?.name ?? r.secretRef?.name)).toEqual([
        configMap.metadata.name,
        secret.metadata.name,
      ]);
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.configMapKeyRef ?? e.valueFrom?.secretKeyRef;
        if (!ref) continue;
        const src = e.valueFrom.configMapKeyRef
          ? named('ConfigMap', ref.name)?.data
          : named('Secret', ref.name)?.stringData;
        expect(src?.[ref.key], `${d.metadata.name} ${e.name}`).toBeDefined();
      }
    }
  });

  it('probe the gateway on /health (liveness) and /ready (readiness) on its PORT', () => {
    const d = deployment('gatehouse-gateway');
    const c = d.spec.template.spec.containers[0];
    const port = Number(podEnv(d).PORT);
    expect(port).toBe(loadConfig({ PORT: podEnv(d).PORT, GATEHOUSE_MASTER_KEY: 'a'.repeat(64) }).port);
    expect(c.livenessProbe.httpGet.path).toBe('/health');
    expect(c.readinessProbe.httpGet.path).toBe('/ready');
    expect(c.startupProbe.httpGet.path).toBe('/health');
    for (const p of [c.livenessProbe, c.readinessProbe, c.startupProbe])
      expect(containerPort(d, p.httpGet.port)).toBe(port);
  });

  it('probe the media service on /health on its MEDIA_PORT; the worker has no port to probe', () => {
    const d = deployment('gatehouse-media');
    const c = d.spec.template.spec.containers[0];
    const port = Number(podEnv(d).MEDIA_PORT);
    for (const p of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
      expect(p.httpGet.path).toBe('/health');
      expect(containerPort(d, p.httpGet.port)).toBe(port);
    }
    const w = deployment('gatehouse-worker').spec.template.spec.containers[0];
    expect(w.args).toEqual(['worker']);
    expect(w.ports).toBeUndefined();
    expect(w.livenessProbe ?? w.readinessProbe).toBeUndefined();
  });

  it('route each Service to the pods of one Deployment, on a port they listen on', () => {
    const targets: Record<string, string> = {
      gatehouse: 'gatehouse-gateway',
      'gatehouse-media': 'gatehouse-media',
    };
    for (const s of ofKind('Service')) {
      const matching = ofKind('Deployment').filter((d) =>
        Object.entries(s.spec.selector).every(([k, v]) => d.spec.template.metadata.labels[k] === v),
      );
      expect(matching.map((d) => d.metadata.name)).toEqual([targets[s.metadata.name]]);
      for (const p of s.spec.ports) expect(containerPort(matching[0], p.targetPort)).toBeGreaterThan(0);
    }
  });

  it('split the gateway, worker and media service, on PostgreSQL and Redis', () => {
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'GATEHOUSE_MASTER_KEY', 'GATEHOUSE_ADMIN_TOKEN'])
      expect(secret.stringData[name], name).toBeTruthy();
    expect(secret.stringData.DATABASE_URL).toMatch(/^postgres:\/\//);
    expect(secret.stringData.REDIS_URL).toMatch(/^redis:\/\//);
    expect(configMap.data).toMatchObject({
      GATEHOUSE_WORKER: 'off',
      GATEHOUSE_MEDIA: 'off',
      GATEHOUSE_MEDIA_AUTH: 'keys',
    });
    // Nothing secret in the ConfigMap.
    for (const k of Object.keys(configMap.data))
      expect(k).not.toMatch(/KEY|TOKEN|PASSWORD|DATABASE_URL|REDIS_URL/);
  });

  it.skipIf(!hasKubectl)(
    'build with kustomize (kubectl kustomize) into the image kustomization.yaml names',
    () => {
      const r = spawnSync('kubectl', ['kustomize', K8S], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
      const built = parseAllDocuments(r.stdout).map((d) => d.toJS() as Doc);
      expect(built).toHaveLength(resources.length);
      for (const d of built) expect(d.metadata.labels['app.kubernetes.io/part-of']).toBe('gatehouse');
      const image = `${kustomization.images[0].name}:${kustomization.images[0].newTag}`;
      for (const d of built.filter((x) => x.kind === 'Deployment'))
        expect(d.spec.template.spec.containers[0].image).toBe(image);
    },
  );

  it('hold settings Gatehouse accepts, and a Secret template it refuses to start on', () => {
    const env = { ...configMap.data, ...secret.stringData };
    // The template's placeholders stop the start: they cannot be deployed by mistake.
    expect(() => loadConfig(env)).toThrow(/GATEHOUSE_MASTER_KEY/);
    expect(adminTokenWeakness(secret.stringData.GATEHOUSE_ADMIN_TOKEN)).not.toBeNull();
    const filled = { ...env, GATEHOUSE_MASTER_KEY: 'ab'.repeat(32), GATEHOUSE_ADMIN_TOKEN: undefined };
    const config = loadConfig(filled);
    expect(config).toMatchObject({
      port: 8080,
      dataDir: '/data',
      databaseUrl: secret.stringData.DATABASE_URL,
    });
    expect(config.batches.worker).toBe(false);
    const media = loadMediaConfig(filled);
    expect(media).toMatchObject({ port: 8081, auth: 'keys' });
  });
});

/** The base image argument, as the Dockerfile's FROM lines name it. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's syntax, not a template
const NODE_IMAGE_ARG = '${NODE_IMAGE}';

describe('the Dockerfile', () => {
  it('gets what the build reads, and no local data or keys, in its build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    for (const needed of [
      'src',
      'console',
      'scripts',
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
    ])
      expect(ignored, needed).not.toContain(needed);
    for (const kept of ['node_modules', 'dist', 'data', '.env', '.git']) expect(ignored).toContain(kept);
  });

  it('installs with the lock file and runs the package it built', () => {
    const build = stage(dockerfile, 'build');
    expect(build.from).toBe(NODE_IMAGE_ARG);
    expect(argsOf(stage(dockerfile, 'global'), 'ARG')).toEqual(['NODE_IMAGE=node:20-bookworm-slim']);
    expect(argsOf(build, 'RUN')).toContain('npm ci --no-audit --no-fund');
    expect(argsOf(stage(dockerfile, 'deps'), 'RUN')).toEqual([
      'npm ci --omit=dev --no-audit --no-fund --prefer-offline',
    ]);
    expect(runtime.from).toBe(NODE_IMAGE_ARG);
    expect(argsOf(runtime, 'COPY')).toEqual(['--from=deps /app /app']);
    expect(imageEnv).toMatchObject({ NODE_ENV: 'production', MALLOC_ARENA_MAX: '2' });
    // The flag `npm start` runs with (package.json), as the image's entry point.
    const start = JSON.parse(read('package.json')).scripts.start as string;
    expect(start).toContain('MALLOC_ARENA_MAX=2 node --max-semi-space-size=32 dist/cli.js serve');
    expect(execForm(onlyArgs(runtime, 'ENTRYPOINT'))).toEqual([
      'node',
      '--max-semi-space-size=32',
      'dist/cli.js',
    ]);
    expect(execForm(onlyArgs(runtime, 'CMD'))).toEqual(['serve']);
  });
});

describe('compose.yaml', () => {
  const services = compose.services as Record<string, Doc>;
  const gatehouse = Object.entries(services).filter(([, s]) => s.build);

  it('runs the gateway, a worker and the media service from the Dockerfile, beside PostgreSQL and Redis', () => {
    expect(Object.keys(services).sort()).toEqual(['gateway', 'media', 'postgres', 'redis', 'worker']);
    expect(gatehouse.map(([n, s]) => [n, s.command])).toEqual([
      ['gateway', ['serve']],
      ['worker', ['worker']],
      ['media', ['media']],
    ]);
    for (const [, s] of gatehouse) {
      expect(s.build).toBe('.');
      expect(s.image).toBe(services.gateway.image);
      expect(cliCommands).toContain(s.command[0]);
      expect(s.environment).toMatchObject({ GATEHOUSE_WORKER: 'off', GATEHOUSE_MEDIA: 'off' });
      expect(s.environment.DATABASE_URL).toMatch(/^postgres:\/\/gatehouse:.*@postgres:5432\/gatehouse$/);
      expect(s.environment.REDIS_URL).toBe('redis://redis:6379');
    }
    expect(services.postgres.image).toMatch(/^postgres:/);
    expect(services.redis.image).toMatch(/^redis:/);
    expect(services.media.environment.GATEHOUSE_MEDIA_AUTH).toBe('keys');
  });

  it('publishes the ports the image listens on', () => {
    const exposed = argsOf(runtime, 'EXPOSE').flatMap((a) => a.split(/\s+/));
    expect(exposed).toEqual([imageEnv.PORT, imageEnv.MEDIA_PORT]);
    expect(services.gateway.ports).toEqual([`${imageEnv.PORT}:${imageEnv.PORT}`]);
    expect(services.media.ports).toEqual([`${imageEnv.MEDIA_PORT}:${imageEnv.MEDIA_PORT}`]);
    expect(services.worker.ports).toBeUndefined();
  });

  it('keeps each process state on a declared volume at the image data directory', () => {
    expect(argsOf(runtime, 'VOLUME')).toEqual([`["${imageEnv.GATEHOUSE_DATA_DIR}"]`]);
    const declared = Object.keys(compose.volumes);
    const used: string[] = [];
    for (const [name, s] of Object.entries(services))
      for (const v of s.volumes ?? []) {
        const [source = '', target] = String(v).split(':');
        expect(declared, `${name}: ${v}`).toContain(source);
        used.push(source);
        if (s.build) expect(target).toBe(imageEnv.GATEHOUSE_DATA_DIR);
      }
    expect(new Set(used).size).toBe(used.length);
    expect(used.sort()).toEqual(declared.sort());
  });

  it('starts each service once what it depends on is healthy', () => {
    for (const [name, s] of Object.entries(services))
      for (const [dep, cond] of Object.entries(s.depends_on ?? {}) as [string, Doc][]) {
        expect(services[dep], `${name} → ${dep}`).toBeDefined();
        expect(cond.condition).toBe('service_healthy');
        const target = services[dep];
        // A health check of its own, or the image's HEALTHCHECK (the gateway's /health).
        if (target.build) expect(argsOf(runtime, 'HEALTHCHECK')).toHaveLength(1);
        else expect(target.healthcheck?.test).toBeTruthy();
        expect(target.healthcheck?.disable).not.toBe(true);
      }
    expect(Object.keys(services.gateway.depends_on).sort()).toEqual(['postgres', 'redis']);
    // The worker has no HTTP port: the image's check is turned off; the media service checks its own port.
    expect(services.worker.healthcheck).toEqual({ disable: true });
    expect(services.media.healthcheck.test.join(' ')).toContain('MEDIA_PORT');
    const imageCheck = execForm(onlyArgs(runtime, 'HEALTHCHECK')).join(' ');
    expect(services.media.healthcheck.test.slice(1).join(' ')).toBe(
      imageCheck.replace('process.env.PORT || 8080', 'process.env.MEDIA_PORT || 8081'),
    );
  });

  it('takes every variable it interpolates from .env.example, which .gitignore keeps .env of', () => {
    const text = read('compose.yaml');
    const interpolated = [...text.matchAll(/\$\{(\w+)/g)].map((m) => m[1]);
    expect(interpolated.length).toBeGreaterThan(0);
    for (const v of interpolated) expect(Object.keys(envExample), v).toContain(v);
    for (const [, s] of gatehouse) expect(s.env_file).toEqual(['.env']);
    expect(read('.gitignore').split('\n')).toContain('.env');
    expect(read('.dockerignore').split('\n')).toContain('.env');
  });
});

describe('variable names', () => {
  /** Every variable the deployment files give a Gatehouse process. */
  const given: [string, string][] = [
    ...Object.keys(configMap.data).map((k): [string, string] => [k, 'configmap.yaml']),
    ...Object.keys(secret.stringData).map((k): [string, string] => [k, 'secret.yaml']),
    ...[...read('deploy/kubernetes/secret.yaml').matchAll(/^\s*#\s*([A-Z][A-Z0-9_]+):/gm)].map(
      (m): [string, string] => [m[1] ?? '', 'secret.yaml (commented)'],
    ),
    ...Object.entries(compose.services as Record<string, Doc>)
      .filter(([, s]) => s.build)
      .flatMap(([name, s]) =>
        Object.keys(s.environment).map((k): [string, string] => [k, `compose ${name}`]),
      ),
    // POSTGRES_PASSWORD is the PostgreSQL container's (and its URL's).
    ...Object.keys(envExample)
      .filter((k) => k !== 'POSTGRES_PASSWORD')
      .map((k): [string, string] => [k, '.env.example']),
    // NODE_ENV and MALLOC_ARENA_MAX are Node.js's and glibc's.
    ...Object.keys(imageEnv)
      .filter((k) => !['NODE_ENV', 'MALLOC_ARENA_MAX'].includes(k))
      .map((k): [string, string] => [k, 'Dockerfile']),
  ];

  it('are all read by Gatehouse (a renamed variable fails here)', () => {
    expect(given.length).toBeGreaterThan(20);
    const unknown = given.filter(([k]) => !readByGatehouse(k)).map(([k, where]) => `${k} (${where})`);
    expect(unknown).toEqual([]);
  });

  it('would catch a name Gatehouse does not read', () => {
    expect(readByGatehouse('GATEHOUSE_DATA_DIR')).toBe(true);
    expect(readByGatehouse('OPENAI_API_KEY')).toBe(true);
    expect(readByGatehouse('GATEHOUSE_DATA_DIRECTORY')).toBe(false);
    expect(readByGatehouse('OPENAIX_API_KEY')).toBe(false);
  });

  it('are documented for users', () => {
    const docs = read('docs/configuration.md');
    for (const [k] of given) expect(docs, k).toMatch(new RegExp(`\\b${k}\\b`));
  });
});
