/**
 * The HTTP API's actor routes as a caller builds them (docs/http-api.md): the node forwarding a
 * call to the holder (main/forward.ts) and keepwork/client. Each part is percent-encoded, so a
 * name holding `/` or `?` stays one segment.
 *
 *   callPath(acme/Counter/a b, 'add', true)   /v1/actors/acme/Counter/a%20b/add?durable=1
 *   alarmPath(acme/Counter/a b)               /v1/actors/acme/Counter/a%20b/alarm
 */
import type { ActorAddress } from './address.js';

const seg = (s: string) => encodeURIComponent(s);

function actorPath(a: ActorAddress): string {
  return `/v1/actors/${seg(a.tenant)}/${seg(a.className)}/${seg(a.name)}`;
}

/** A method call: POST, the arguments a JSON array; `durable` adds `?durable=1`. */
export function callPath(a: ActorAddress, method: string, durable: boolean): string {
  return `${actorPath(a)}/${seg(method)}${durable ? '?durable=1' : ''}`;
}

/** The actor's committed alarm: GET. */
export function alarmPath(a: ActorAddress): string {
  return `${actorPath(a)}/alarm`;
}
