/** Seeds 101..125 of the deterministic simulation (seed-range.ts). */
import { seedRangeTests } from './seed-range.js';

seedRangeTests(5);
