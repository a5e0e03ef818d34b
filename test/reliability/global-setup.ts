/**
 * Vitest global setup for the reliability suite: at the end of the run, composes the figures every
 * area wrote into reliability/results.md.
 */
import { writeResults } from './figures.js';

export default function setup() {
  return function teardown() {
    writeResults();
  };
}
