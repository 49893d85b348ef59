/** Seeds 1..25 of the deterministic simulation (seed-range.ts). */
import { seedRangeTests } from './seed-range.js';

seedRangeTests(1, { firstUploadDelayed: true });
