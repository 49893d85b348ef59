/**
 * What bench/drain drains, fixed for every configuration: the actor class whose alarms pile up
 * (test/fixtures/cluster/alarmed.ts), its tenant, the lease timings every node runs with, and the
 * modes (named sets of tunables) a run compares.
 */
import { join } from 'node:path';
import { REPO } from '../../../support/repo.js';

export const ALARMED_MODULE = join(REPO, 'test/fixtures/cluster/alarmed.ts');
export const CLASS = 'Alarmed';
export const TENANT = 'drain';
export const LEASE = { leasePeriodMs: 10_000, graceMs: 5_000, skewBoundMs: 1_000 };
/** From an alarm's due time T to when a sweep may first read it: lease + grace. */
export const MARGIN_MS = LEASE.leasePeriodMs + LEASE.graceMs;

export const MODES = {
  adr: {
    label: 'ADR defaults',
    set: { ...LEASE, alarmSweepMs: 10_000, sweepAdaptive: false, deliveriesPerSweep: 256, deliveryConcurrency: 32 },
  },
  adaptive: { label: 'adaptive', set: { ...LEASE, sweepAdaptive: true } },
  tuned: {
    label: 'tuned',
    set: {
      ...LEASE,
      sweepAdaptive: true,
      deliveriesPerSweep: 1024,
      sweepPageEntries: 4096,
      deliveryConcurrency: 64,
      workerConcurrency: 8,
      storeSocketsMax: 128,
    },
  },
} as const;
export type Mode = keyof typeof MODES;

/** The most alarms read back one by one from their actors (above it, lateness comes from the drain curve). */
export const READBACK_MAX = 10_000;
/** Objects copied at once while the backlog is built. */
export const COPY_IN_FLIGHT = 32;
