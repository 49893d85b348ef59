/**
 * The public API of the `keepwork` package.
 *
 *   import { startNode, defineActor } from 'keepwork'
 */
export { startNode } from './http/start.js';
export type { StartNodeOptions, KeepworkNode, ActorHandle, IdempotentActorHandle, ActorShape, Stub } from './main/node-api.js';
export * from './actor.js';
export { parseAddress, formatAddress, type ActorAddress } from './core/address.js';
export { resolveOptions, DEFAULTS, type KeepworkOptions, type ResolvedConfig } from './core/config.js';
export * from './core/errors.js';
export { SystemClock, SimClock, type Clock, type TimerHandle } from './core/clock.js';
export { SystemRandom, SeededRandom, type Random } from './core/random.js';
export { createLogger, type Logger } from './core/logger.js';
export { RIGHTS, newToken, sha256Hex, parseTokenFile, type Right, type TokenEntry, type TokenFile } from './core/tokens.js';
export type { Pem, TlsOptions } from './core/tls-material.js';
export type { ObjectStore, PutCondition, ListOptions, ListPage, StoredObject, ObjectHead } from './store/types.js';
export { openStore, defaultBucketUrl } from './store/open.js';
export { MemoryStore, type FaultHook, type Fault, type StoreRequest } from './store/memory.js';
export { listAll } from './store/keys.js';
