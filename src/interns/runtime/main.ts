/**
 * An intern's runtime: one process per intern, started by LocalProvisioner with its working
 * directory as cwd. It listens on 127.0.0.1 (a free port, reported to the gateway over the IPC
 * channel) and exits when that channel closes, so a gateway that dies leaves no runtime behind.
 */
import type { AddressInfo } from 'node:net';
import { Agent } from './agent.js';
import { RUNTIME_CONFIG_FILE, RUNTIME_ENV, runtimeConfigFromEnv, SESSIONS_DIR } from './config.js';
import { Workspace } from './files.js';
import { ModelClient } from './model-client.js';
import { createRuntimeServer } from './server.js';
import { SessionStore } from './sessions.js';

/** The message the runtime sends over IPC once it listens. */
export interface ListeningMessage {
  type: 'listening';
  port: number;
}

const config = runtimeConfigFromEnv(process.env, process.cwd());
// Nothing this process starts (the shell tool) inherits the token.
delete process.env[RUNTIME_ENV.token];

const log = (line: string) => process.stdout.write(`${line}\n`);
const sessions = new SessionStore(config.workdir, SESSIONS_DIR);
const workspace = new Workspace(config.workdir, [SESSIONS_DIR, RUNTIME_CONFIG_FILE]);
const agent = new Agent({
  config,
  sessions,
  workspace,
  model: new ModelClient(config.gatewayUrl, config.token, config.model),
  log,
});
agent.restore();

const server = createRuntimeServer(config, agent);
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  log(`runtime of intern ${config.internId} listening on 127.0.0.1:${port} (model ${config.model})`);
  if (process.send) process.send({ type: 'listening', port } satisfies ListeningMessage);
});

let closing = false;
function shutdown(reason: string): void {
  if (closing) return;
  closing = true;
  log(`runtime stopping: ${reason}`);
  agent.close();
  server.close();
  // Runs just aborted write their run_ended ending first; sessions are written on every change.
  setTimeout(() => server.closeAllConnections(), 100).unref();
  setTimeout(() => process.exit(0), 300).unref();
}

process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('disconnect', () => shutdown('the gateway closed the IPC channel'));
