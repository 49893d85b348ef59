/** Seeds 26..50 of the deterministic simulation (seed-range.ts). */
import { seedRangeTests } from './seed-range.js';

seedRangeTests(2);
