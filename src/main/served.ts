/**
 * Which actors a node serves: those of its classes (class name → module URL), in its tenants (all
 * when undefined). `serves` answers quietly (the sweep's offers, the timer's refill); `checkServed`
 * throws NotFound naming the class or tenant not served (a call, a handle); `checkMethod` throws
 * NotFound for a method the class does not have, before the call takes the actor.
 */
import type { ActorAddress } from '../core/address.js';
import { NotFound } from '../core/errors.js';

export interface Served {
  /** Class name → module URL. */
  readonly classes: Record<string, string>;
  /** Tenants served; all when undefined. */
  readonly tenants: string[] | undefined;
  /** Class name → its method names, as loaded at start (class-loader.ts checkClasses); absent: the worker checks. */
  readonly methods?: Readonly<Record<string, readonly string[]>>;
}

export function serves(served: Served, address: ActorAddress): boolean {
  return (
    Object.prototype.hasOwnProperty.call(served.classes, address.className) && (!served.tenants || served.tenants.includes(address.tenant))
  );
}

export function checkServed(served: Served, address: ActorAddress): ActorAddress {
  if (!Object.prototype.hasOwnProperty.call(served.classes, address.className))
    throw new NotFound(`this node serves no actor class ${JSON.stringify(address.className)}`);
  if (served.tenants && !served.tenants.includes(address.tenant))
    throw new NotFound(`this node does not serve tenant ${JSON.stringify(address.tenant)}`);
  return address;
}

export function checkMethod(served: Served, address: ActorAddress, method: string): void {
  const methods = served.methods?.[address.className];
  if (methods && !methods.includes(method)) throw new NotFound(`class ${address.className} has no method ${JSON.stringify(method)}`);
}
