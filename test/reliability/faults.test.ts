/**
 * Faults (issue 8): upstream failures in every wire format, the database restarting under load,
 * a full disk under the media store, and SIGTERM during a stream and during a batch upload. Each
 * section lives in ./faults/; this file runs them in order and writes the `faults` figures once.
 * `FAULTS_ONLY=upstream|db|disk|shutdown` runs one section (and then writes no figures).
 */
import { afterAll } from 'vitest';
import { postgresUrl } from '../support/gateway.js';
import { figures } from './faults/common.js';
import { databaseFaults } from './faults/database.js';
import { diskFaults } from './faults/disk.js';
import { shutdownFaults } from './faults/shutdown.js';
import { upstreamFaults } from './faults/upstream.js';
import { writeFigures } from './figures.js';

const started = performance.now();

const only = process.env.FAULTS_ONLY;
if (!only || only === 'upstream') upstreamFaults();
if (!only || only === 'db') databaseFaults();
if (!only || only === 'disk') diskFaults();
if (!only || only === 'shutdown') shutdownFaults();

afterAll(() => {
  if (only) return;
  if (!postgresUrl) figures.notes.push('Database: NOT MEASURED in this run (no TEST_DATABASE_URL).');
  writeFigures({
    area: 'faults',
    title: 'Upstream faults, a PostgreSQL restart under load, a full disk, SIGTERM mid-stream and mid-upload',
    rows: [
      ...figures.rows,
      ['run time of the fault suite (s)', Math.round((performance.now() - started) / 100) / 10],
    ],
    notes: figures.notes,
  });
});
