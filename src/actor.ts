/**
 * `keepwork/actor`: what an actor class module needs, without the node (light to load in
 * every worker). The package root re-exports it.
 */
export {
  defineActor,
  type ActorDefinition,
  type ActorContext,
  type AlarmInfo,
  type GuestSql,
  type GuestStatement,
} from './workers/define-actor.js';
/** Throw from a handler to answer the caller with a 400 (bad input) instead of a 500. */
export { BadRequest } from './core/errors.js';
