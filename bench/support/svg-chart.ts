/** The SVG charts of `keepwork bench` (src/bench/svg-chart.ts), for the repository's benches. */
export * from '../../src/bench/svg-chart.js';
