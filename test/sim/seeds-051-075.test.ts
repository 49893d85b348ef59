/** Seeds 51..75 of the deterministic simulation (seed-range.ts). */
import { seedRangeTests } from './seed-range.js';

seedRangeTests(3);
