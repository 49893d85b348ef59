/** The metrics reader of `keepwork bench` (src/bench/prom.ts), for the repository's benches. */
export * from '../../src/bench/prom.js';
