/**
 * Actor addresses (docs/architecture.md): `tenant/class/name`.
 *
 *   tenant  [a-z0-9][a-z0-9_-]{0,63}
 *   class   [A-Za-z0-9_-]{1,64}         (never a '.': the index uses `<class>.t`)
 *   name    any UTF-8 string of 1–400 bytes; in bucket keys and file names always as lowercase hex
 *           (no more: an index key holds the name in hex next to up to ~190 other bytes, and S3
 *           keys end at 1024 bytes, so 400 keeps every key the layout builds valid)
 *
 * As a string the name is everything after the second '/', so it may itself contain '/'.
 * Invalid input raises `BadRequest` naming the part and the rule.
 *
 * An address is parsed once (`parseAddress`) into a frozen `ActorAddress` that carries its
 * formatted `key` ('acme/Counter/a/b'), the actor's key in every map, lane, log line and message.
 * Code passes that one value, never a key and the parts side by side; only a lookup (a map, a
 * set, the sweep's busy check) takes the key alone. A structured clone (a message to a worker)
 * keeps neither the freezing nor the promise that the value was validated: what crosses is the
 * key, parsed again on the other side (workers/messages.ts `toWire` / `fromWire`).
 */
import { BadRequest } from './errors.js';

export interface ActorAddress {
  readonly tenant: string;
  readonly className: string;
  readonly name: string;
  /** `tenant/class/name`, formatted once by `parseAddress`. */
  readonly key: string;
}

const TENANT_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const CLASS_RE = /^[A-Za-z0-9_-]{1,64}$/;
const NAME_MAX_BYTES = 400;

export function validateTenant(tenant: unknown): string {
  if (typeof tenant !== 'string' || !TENANT_RE.test(tenant)) {
    throw new BadRequest(`tenant ${JSON.stringify(tenant)} must match [a-z0-9][a-z0-9_-]{0,63}`);
  }
  return tenant;
}

export function validateClassName(className: unknown): string {
  if (typeof className !== 'string' || !CLASS_RE.test(className)) {
    throw new BadRequest(`class ${JSON.stringify(className)} must match [A-Za-z0-9_-]{1,64}`);
  }
  return className;
}

function validateName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) throw new BadRequest(`actor name must be a non-empty string`);
  if (!name.isWellFormed()) throw new BadRequest(`actor name is not well-formed UTF-8`);
  const bytes = Buffer.byteLength(name, 'utf8');
  if (bytes > NAME_MAX_BYTES) throw new BadRequest(`actor name is ${bytes} bytes; the limit is ${NAME_MAX_BYTES}`);
  return name;
}

/** Accepts `'tenant/class/name'` or `{ tenant, className, name }` (also `class` for className). */
export function parseAddress(input: unknown): ActorAddress {
  if (typeof input === 'string') {
    const first = input.indexOf('/');
    const second = first < 0 ? -1 : input.indexOf('/', first + 1);
    if (second < 0) throw new BadRequest(`actor address ${JSON.stringify(input)} must be tenant/class/name`);
    return parseAddress({ tenant: input.slice(0, first), className: input.slice(first + 1, second), name: input.slice(second + 1) });
  }
  if (typeof input !== 'object' || input === null) throw new BadRequest(`actor address must be a string or an object, got ${typeof input}`);
  const o = input as Record<string, unknown>;
  const parts = { tenant: validateTenant(o.tenant), className: validateClassName(o.className ?? o.class), name: validateName(o.name) };
  return Object.freeze({ ...parts, key: formatAddress(parts) });
}

/** `tenant/class/name` of the parts (a parsed address has it already: its `key`). */
export function formatAddress(a: Pick<ActorAddress, 'tenant' | 'className' | 'name'>): string {
  return `${a.tenant}/${a.className}/${a.name}`;
}

export function nameHex(name: string): string {
  return Buffer.from(name, 'utf8').toString('hex');
}

export function nameFromHex(hex: string): string {
  if (!/^(?:[0-9a-f]{2})+$/.test(hex)) throw new BadRequest(`not a hex-encoded actor name: ${JSON.stringify(hex)}`);
  return Buffer.from(hex, 'hex').toString('utf8');
}
