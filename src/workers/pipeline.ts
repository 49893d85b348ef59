/**
 * The event pipeline: runs one event against one actor's database. A plain async function with
 * every dependency injected, so it runs inline in tests (and later in the simulator) exactly as
 * in a Piscina worker (event-worker.ts is only an adapter).
 *
 *   request: class + method exist? ─▶ open/create db ─▶ begin? ─▶ BEGIN ─▶ init once ─▶ handler ─▶ alarm
 *            outcome ─▶ COMMIT (or ROLLBACK on throw / time limit) ─▶ { result, alarmAt }
 *            with an idempotency key: a repeat answers from `_keep_idem` before BEGIN; a new key is
 *            recorded before COMMIT (idempotency.ts)
 *   alarm:   db exists? ─▶ begin? ─▶ BEGIN ─▶ committed alarm due? ─▶ handler(info) ─▶ committed retry
 *            outcome (alarms/retry.ts) ─▶ COMMIT
 *   delete:  a handler that called ctx.deleteActor() ─▶ ROLLBACK (nothing of it is committed) ─▶
 *            tombstone (after what was committed before) ─▶ local files removed ─▶ { deleted }
 *   begin?:  in a worker, the event's handler start is claimed on its task's start gate
 *            (start-gate.ts); refused, the main thread has given the task up and nothing runs
 *
 * One event at a time per actor is the caller's promise (the main thread serialises them).
 *
 * Group commit of durable calls: a durable call that committed calls `committed` (runEvent's third
 * argument) with its result once its upload is requested, so the caller can start the actor's next
 * event, and replies only once a link holding its commit is in the bucket (the output gate); the
 * commits made while one upload is in flight go up together in the next (replica.sync).
 */
import { BadRequest, ErrorCode, HandlerTimeout, LeaseLost, NotFound, Overloaded, isKeepworkError, reviveError } from '../core/errors.js';
import type { ActorAddress } from '../core/address.js';
import { alarmOutcome, type AlarmState, type EventKind } from '../alarms/retry.js';
import { readAlarm, readFailures, readMeta, writeAlarm, writeMeta, type Db } from './actor-db.js';
import type { Slot, TakeOptions } from './actor-slots.js';
import { hasMethod, type ActorDefinition } from './define-actor.js';
import { createGuestRun, type GuestRun } from './guest-context.js';
import type { ActorEvent, EventResult } from './messages.js';
import { errorData, failure, ok } from './results.js';
import { entryEndedByTombstone, indexBeforeCommit, indexOnTake } from './index-owner.js';
import type { PipelineDeps } from './deps.js';
import type { ReplacedEntry } from '../replication/index-upload.js';
import { deliverTo, deliverWithoutState, type EntryPlace } from './deliver.js';
import { checkIdempotencyKey } from '../core/idempotency-key.js';
import { idemCall, lookupCall, recordable, recordError, recordResult, type IdemCall } from './idempotency.js';

/** Told a durable call's result once its commit is done and its upload requested (its reply still waits for the upload). */
export type OnCommitted = (early: EventResult) => void;

/**
 * `begin`: called just before the handler runs (start-gate.ts); false: the main thread gave the
 * event up (its worker is being restarted) and it ends without running the handler.
 */
export async function runEvent(
  deps: PipelineDeps,
  event: ActorEvent,
  committed?: OnCommitted,
  begin?: () => boolean,
): Promise<EventResult> {
  if (committed && event.type === 'request' && event.durable) deps = { ...deps, committed };
  if (begin) deps = { ...deps, begin };
  switch (event.type) {
    case 'request':
      return runRequest(deps, event);
    case 'alarm':
      return runAlarm(deps, event.address, event.recordFailure === true, event.generation ?? 0);
    case 'deliver':
      return runDeliver(deps, event.address, event.dueMs, event.generation ?? 0, { shard: event.shard });
    case 'getAlarm':
      return withDb(deps, event.address, false, event.generation ?? 0, (slot) => ok(readAlarm(slot.db), false));
    case 'close':
      await deps.slots.close(event.address);
      return ok(null, false);
    case 'closeAll':
      await deps.slots.closeAll();
      return ok(null, false);
    case 'dropAll':
      deps.slots.dropAll();
      return ok(null, false);
    case 'loadClasses':
      return Promise.all(event.classNames.map((c) => deps.loadClass(c))).then(
        () => ok(null, false),
        (err: unknown) => failure(err, null),
      );
  }
}

async function runRequest(deps: PipelineDeps, e: Extract<ActorEvent, { type: 'request' }>): Promise<EventResult> {
  const def = await deps.loadClass(e.address.className).catch((err: unknown) => err as Error);
  if (def instanceof Error) return failure(def, null);
  if (!hasMethod(def, e.method))
    return failure(new NotFound(`class ${e.address.className} has no method ${JSON.stringify(e.method)}`), null);
  const key = e.idempotencyKey;
  const use =
    key !== undefined
      ? (slot: Slot) => runOnce(deps, slot, e, def, key)
      : (slot: Slot) =>
          inEvent(deps, slot, e.address, 'request', e.durable, async (run) => {
            await initOnce(deps, slot.db, def, run);
            return def.methods[e.method]!(run.ctx, ...e.args);
          });
  return withDb(deps, e.address, true, e.generation ?? 0, use, { chainEmpty: e.chainEmpty === true });
}

/** A call with an idempotency key: answered from the record, or run and recorded (idempotency.ts). */
async function runOnce(
  deps: PipelineDeps,
  slot: Slot,
  e: Extract<ActorEvent, { type: 'request' }>,
  def: ActorDefinition,
  key: string,
): Promise<EventResult> {
  const once = await repeatOf(deps, slot, e, key);
  if ('done' in once) return once.done;
  let raised: unknown;
  const r = await inEvent(
    deps,
    slot,
    e.address,
    'request',
    e.durable,
    async (run) => {
      try {
        await initOnce(deps, slot.db, def, run);
        return await def.methods[e.method]!(run.ctx, ...e.args);
      } catch (err) {
        raised = err;
        throw err;
      }
    },
    // TEST-ONLY (rules.idempotencyRecord off): nothing recorded, a repeat runs again.
    (result) => (deps.rules.idempotencyRecord ? recordResult(slot.db, once.call, result, deps.clock.now(), deps.config) : undefined),
  );
  return r.type === 'error' && raised !== undefined ? recordCallError(deps, slot, e.address, once.call, r, raised) : r;
}

/** A repeat is answered from the record — once what is recorded is in the bucket — without running the handler. */
async function repeatOf(
  deps: PipelineDeps,
  slot: Slot,
  e: Extract<ActorEvent, { type: 'request' }>,
  key: string,
): Promise<{ done: EventResult } | { call: IdemCall }> {
  // Given up, the local copy may hold a record the bucket never got, and the give-up may have
  // closed it (an event of the actor ending meanwhile drops its slot): no answer from it.
  if (slot.replica.givenUp) return { done: failure(slot.replica.givenUp, null) };
  const alarmAt = readAlarm(slot.db);
  try {
    if (!e.durable) throw new BadRequest('an idempotency key needs a durable call (callDurable, or ?durable=1)');
    const call = idemCall(checkIdempotencyKey(key), e.method, e.args);
    const seen = lookupCall(slot.db, call, deps.clock.now(), deps.config);
    if (!seen) return { call };
    await slot.replica.sync(); // what is recorded is in the bucket before it answers
    const done: EventResult =
      seen.type === 'result'
        ? { type: 'ok', result: seen.result, alarmAt, deleted: false, ran: false }
        : { type: 'error', error: seen.error, alarmAt };
    return { done };
  } catch (err) {
    return { done: failure(err, alarmAt) };
  }
}

/** The handler raised an error a retry would raise again: recorded and uploaded in a transaction of its own. */
async function recordCallError(
  deps: PipelineDeps,
  slot: Slot,
  address: ActorAddress,
  call: IdemCall,
  r: Extract<EventResult, { type: 'error' }>,
  raised: unknown,
): Promise<EventResult> {
  const own = errorData(raised);
  const record = deps.rules.idempotencyRecord && recordable(r.error); // TEST-ONLY: the rule off records nothing
  if (!record || own.code !== r.error.code || own.message !== r.error.message || slot.replica.givenUp) return r;
  const { db } = slot;
  db.exec('BEGIN IMMEDIATE');
  try {
    recordError(db, call, r.error, deps.clock.now(), deps.config);
    await commitWithAlarm(deps, slot, address, { at: readAlarm(db), failures: readFailures(db) });
    await slot.replica.sync();
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    deps.log.warn({ actor: address.key, err }, 'recording the error of a call with an idempotency key failed');
  }
  return r;
}

/**
 * The alarm event. `inDelivery`: run by a delivery (runDeliver) that holds the actor itself, whose
 * own withDb uploads what the alarm committed before the delivery's outcome is answered; an upload
 * here as well would only capture the image again to find it unchanged.
 */
async function runAlarm(
  deps: PipelineDeps,
  address: ActorAddress,
  recordFailure: boolean,
  generation: number,
  inDelivery = false,
): Promise<EventResult> {
  const use = async (slot: Slot): Promise<EventResult> => {
    const db = slot.db;
    const at = readAlarm(db);
    if (at === null || at > deps.clock.now()) return ok(at, false);
    const def = await deps.loadClass(address.className);
    const info = { scheduledAt: at, retryCount: readFailures(db) };
    return inEvent(deps, slot, address, 'alarm', false, async (run) => {
      if (recordFailure) throw new HandlerTimeout(`the alarm handler of ${address.key} was stopped at its time limit`);
      await initOnce(deps, db, def, run);
      await def.alarm?.(run.ctx, info);
    });
  };
  return withDb(deps, address, false, generation, use, { upload: inDelivery ? 'caller' : 'outcome' });
}

async function runDeliver(
  deps: PipelineDeps,
  address: ActorAddress,
  dueMs: number,
  generation: number,
  found: EntryPlace,
): Promise<EventResult> {
  let taken = '';
  const absent = ok(null, false);
  const result = await withDb(
    deps,
    address,
    false,
    generation,
    (slot) => deliverTo(deps, slot, address, dueMs, () => runAlarm(deps, address, false, generation, true), found),
    { absent: () => absent, onTake: (state) => (taken = state), upload: 'outcome' },
  );
  if (result !== absent) return result;
  try {
    return await deliverWithoutState(deps, address, dueMs, taken === 'deleted', generation, found);
  } catch (e) {
    return stopOnBug(deps, address, null, failure(e, null));
  }
}

async function withDb(
  deps: PipelineDeps,
  address: ActorAddress,
  create: boolean,
  generation: number,
  use: (slot: Slot) => Promise<EventResult> | EventResult,
  opts: TakeOptions & {
    absent?: () => EventResult;
    /**
     * The upload of what the event commits on an actor in memory (uploadFromMemory): `reply`
     * waits for it; `outcome`, an alarm or a delivery, answers the node, not a caller waiting for
     * its durability; `caller`, an alarm run by a delivery, leaves it to the delivery.
     */
    upload?: 'reply' | 'outcome' | 'caller';
  } = {},
): Promise<EventResult> {
  let slot: Slot | null;
  try {
    slot = await deps.slots.acquire(address, create, generation, opts);
  } catch (e) {
    return stopOnBug(deps, address, null, failure(e, null)); // the chain could not be read or restored: the actor is not served
  }
  if (!slot) return opts.absent ? opts.absent() : ok(null, false);
  let result: EventResult;
  try {
    if (slot.fresh) {
      await indexOnTake(deps, slot, address);
      slot.fresh = false;
    }
    result = await use(slot);
    if (slot.memory && !slot.replica.givenUp && opts.upload !== 'caller') await uploadFromMemory(slot, opts.upload ?? 'reply');
  } catch (e) {
    result = failure(e, null);
  }
  stopOnBug(deps, address, slot, result);
  deps.slots.release(slot);
  if (create && result.type === 'error') deps.slots.discardUnwritten(slot);
  return result.type === 'ok' && !deps.slots.isOpen(address) ? { ...result, closed: true } : result;
}

/**
 * The upload of what an event on an actor in memory committed. A call replies only once that is
 * in the bucket (the actor has no local file to make it durable). An actor in memory other than a
 * new one kept open is closed once released, and the node then gives its hold back without asking
 * the worker: a delivery to it counts as done only once its outcome is in the bucket (that of an
 * alarm run by a delivery, by the delivery's withDb: the slot is held by it until then). A kept
 * one is closed through its worker, whose close waits for its uploads, before its hold goes, as an
 * actor in a file is: so an alarm or a delivery to it answers the node at once and its upload goes
 * within the group-commit window, as a file's would (the entry it replaced is deleted once that
 * lands); a call that moves it to a file waits for the upload (actor-slots.ts toFile).
 */
async function uploadFromMemory(slot: Slot, upload: 'reply' | 'outcome'): Promise<void> {
  if (upload === 'outcome' && slot.keep) slot.replica.uploadSoon();
  else await slot.replica.sync();
}

/**
 * A failed invariant (INTERNAL) is a bug, not an outcome to answer and go on from: the actor is
 * given up, with an error log carrying the invariant's message (the replica's, or here without a
 * slot), dropped at release and restored by its next take. The node serves its other actors.
 */
function stopOnBug(deps: PipelineDeps, address: ActorAddress, slot: Slot | null, result: EventResult): EventResult {
  if (result.type !== 'error' || result.error.code !== ErrorCode.Internal) return result;
  if (!slot) deps.log.error({ actor: address.key, err: result.error }, 'actor given up: an invariant failed');
  else if (!slot.replica.givenUp) slot.replica.giveUpNow(reviveError(result.error));
  return result;
}

async function initOnce(deps: PipelineDeps, db: Db, def: ActorDefinition, run: GuestRun): Promise<void> {
  if (readMeta(db, 'initialized') === '1') return;
  await def.init?.(run.ctx);
  writeMeta(db, 'initialized', '1');
}

/**
 * One transaction around `body`: the handler's SQL, the alarm outcome and what `beforeCommit`
 * writes (an idempotency record) commit together. On a
 * failure the SQL rolls back; for an alarm event the committed-retry outcome is then written in a
 * transaction of its own. After the commit the replica uploads it: at once for a durable call
 * (which replies only once its link is in the bucket), otherwise within the group-commit window (from
 * replicationDelayMs idle to replicationDelayMaxMs busy: replication/upload-pace.ts). An
 * event that deleted the actor rolls back instead, and ends the chain (`destroy`).
 */
async function inEvent(
  deps: PipelineDeps,
  slot: Slot,
  address: ActorAddress,
  kind: EventKind,
  durable: boolean,
  body: (run: GuestRun) => Promise<unknown>,
  beforeCommit?: (result: unknown) => void,
): Promise<EventResult> {
  const { db, replica } = slot;
  if (replica.givenUp) return failure(replica.givenUp, null);
  if (deps.begin && !deps.begin()) return failure(new Overloaded('given up before its handler began: its worker is being restarted'), null);
  db.exec('BEGIN IMMEDIATE');
  const before: AlarmState = { at: readAlarm(db), failures: readFailures(db) };
  const soFar = () => alarmOutcome(kind, before, run.alarm, false, deps.clock.now(), deps.config);
  const checkpoint = durable ? () => midEventCheckpoint(deps, slot, address, soFar()) : undefined;
  const run = createGuestRun(db, address, before.at, deps.clock, deps.log.child({ actor: address.key }), checkpoint);
  let after: AlarmState | null = null; // null: the event deleted the actor
  let result: unknown;
  try {
    result = await withTimeLimit(deps, body(run), address);
    run.end();
    if (run.deleted) db.exec('ROLLBACK');
    else {
      after = soFar();
      beforeCommit?.(result);
      await commitWithAlarm(deps, slot, address, after);
    }
  } catch (err) {
    run.end();
    // Dropped while the event awaited (the lease was lost, ActorSlots.dropAll): the database
    // closed under it, so nothing committed, and the error is the drop's, not the handler's.
    if (!db.open)
      return failure(
        replica.givenUp ?? new LeaseLost(`${address.key} was stopped while its event ran (the lease was lost); nothing committed`),
        null,
      );
    if (db.inTransaction) db.exec('ROLLBACK');
    const failed = alarmOutcome(kind, before, run.alarm, true, deps.clock.now(), deps.config);
    if (kind === 'alarm' && !replica.givenUp) await recordAlarmFailure(deps, slot, address, before, failed, err);
    return failure(err, failed.at);
  }
  return after ? replicate(deps, slot, durable, result, after.at) : destroy(deps, slot, address, result);
}

/** Writes the alarm outcome, lists it in the index (before the commit), commits, and schedules
 *  the DELETE of the entry it replaced for after the upload. */
async function commitWithAlarm(deps: PipelineDeps, slot: Slot, address: ActorAddress, state: AlarmState): Promise<void> {
  commitAlarm(slot.db, state);
  const replaced = await indexBeforeCommit(deps, slot, address, state.at);
  slot.db.exec('COMMIT');
  if (!replaced) return;
  if (deps.rules.deleteAfterUpload) slot.replica.index.deleteAfterUpload(replaced);
  else await deleteBeforeUpload(deps, replaced);
}

/** TEST-ONLY (rules.deleteAfterUpload off, the order R2 forbids): the replaced entry goes before the upload. */
async function deleteBeforeUpload(deps: PipelineDeps, replaced: ReplacedEntry): Promise<void> {
  await deps.store.deleteMany([replaced.key]).catch(() => undefined);
}

/**
 * After the commit: a durable call waits for a link holding its commit — with `deps.committed`,
 * letting the actor's next events run meanwhile —; a plain one schedules its upload.
 */
async function replicate(deps: PipelineDeps, slot: Slot, durable: boolean, result: unknown, alarmAt: number | null): Promise<EventResult> {
  const ok: EventResult = { type: 'ok', result, alarmAt, deleted: false, ran: true };
  try {
    if (durable) await durableReply(deps, slot, ok);
    else slot.replica.committed();
  } catch (e) {
    return failure(e, alarmAt);
  }
  return ok;
}

/**
 * The event deleted the actor, and its transaction was rolled back: nothing of a destroy is
 * committed, so no record of it (an idempotency record above all) can reach the bucket ahead of
 * its tombstone and have a retry answered "done" while the chain goes on. What was committed
 * before goes up, the tombstone ends the chain, the entry the state named is deleted after it, and
 * the local files go; only then is the destroy answered. If the tombstone does not land the actor
 * is given up as it stands, its committed alarm too, and a retry runs the destroy again.
 */
async function destroy(deps: PipelineDeps, slot: Slot, address: ActorAddress, result: unknown): Promise<EventResult> {
  const alarmAt = readAlarm(slot.db);
  try {
    const named = entryEndedByTombstone(deps, slot);
    await slot.replica.tombstone(named ? [named] : []);
    deps.slots.remove(address);
  } catch (e) {
    return failure(e, alarmAt);
  }
  return { type: 'ok', result, alarmAt: null, deleted: true, ran: true };
}

/** The upload is requested before the caller hears of the commit; the reply waits for it (unless the rule is off, in the simulator). */
async function durableReply(deps: PipelineDeps, slot: Slot, early: EventResult): Promise<void> {
  const landed = slot.replica.sync();
  deps.committed?.(early);
  if (deps.rules.durableReplyAfterUpload) await landed;
  else landed.catch(() => undefined);
}

/**
 * `ctx.checkpoint()` in a durable call: commit what is done so far — the alarm as the handler has
 * left it too, listed in the index first — and upload it, then go on in a new transaction.
 */
async function midEventCheckpoint(deps: PipelineDeps, slot: Slot, address: ActorAddress, soFar: AlarmState): Promise<void> {
  await commitWithAlarm(deps, slot, address, soFar);
  try {
    await slot.replica.sync();
  } finally {
    slot.db.exec('BEGIN IMMEDIATE');
  }
}

function commitAlarm(db: Db, state: AlarmState): void {
  writeAlarm(db, state.at);
  writeMeta(db, 'alarm_failures', state.failures === 0 ? null : String(state.failures));
}

/** Commits the committed-retry outcome (listed in the index: no sweep delivers it early). */
async function recordAlarmFailure(
  deps: PipelineDeps,
  slot: Slot,
  address: ActorAddress,
  before: AlarmState,
  after: AlarmState,
  err: unknown,
): Promise<void> {
  slot.db.exec('BEGIN IMMEDIATE');
  try {
    await commitWithAlarm(deps, slot, address, after);
  } catch (e) {
    if (slot.db.inTransaction) slot.db.exec('ROLLBACK');
    deps.log.error({ actor: address.key, err: e }, 'recording an alarm failure failed; the actor is given up');
    return;
  }
  slot.replica.committed();
  deps.log.warn(
    { actor: address.key, retryCount: before.failures, nextAttemptAt: after.at, err: errorData(err) },
    'alarm handler failed; retry committed',
  );
}

/** A timer, not an AbortController: aborting one builds a DOMException with a stack, per event, a cost a hot worker feels. */
async function withTimeLimit<T>(deps: PipelineDeps, work: Promise<T>, address: ActorAddress): Promise<T> {
  const limit = deps.config.handlerTimeoutMs;
  let timer: { cancel(): void } | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = deps.clock.setTimer(limit, () =>
      reject(new HandlerTimeout(`a handler of ${address.key} ran past handlerTimeoutMs (${limit} ms)`)),
    );
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    timer?.cancel();
  }
}
