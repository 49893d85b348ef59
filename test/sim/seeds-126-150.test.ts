/** Seeds 126..150 of the deterministic simulation (seed-range.ts). */
import { seedRangeTests } from './seed-range.js';

seedRangeTests(6);
