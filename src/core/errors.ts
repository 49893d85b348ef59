/**
 * Typed errors with stable string codes.
 *
 * Every error keepwork raises on purpose is a `KeepworkError` with a `code` from `ErrorCode`.
 * Code that reacts to an error matches on `code` (or `isKeepworkError(e, code)`), never on the
 * message: errors that cross the worker boundary arrive as plain objects whose only reliable
 * fields are `code`, `message` and `details`.
 */

export const ErrorCode = {
  /** A conditional write lost: the precondition (If-None-Match / If-Match) did not hold. */
  PreconditionFailed: 'PRECONDITION_FAILED',
  /** A conditional write may or may not have been applied; read back to find out. */
  AmbiguousWrite: 'AMBIGUOUS_WRITE',
  /** The store could not be reached or kept failing within the retry budget. */
  StoreUnavailable: 'STORE_UNAVAILABLE',
  /** A key the store refuses (empty segment, `..`, NUL, too long, ...). */
  BadKey: 'BAD_KEY',
  /** Invalid input from a caller (address, body, CLI argument). */
  BadRequest: 'BAD_REQUEST',
  /** An option failed validation. */
  BadConfig: 'BAD_CONFIG',
  /** An actor class module is missing, cannot be loaded, or its default export is not a `defineActor` definition. */
  BadClass: 'BAD_CLASS',
  /** The HTTP port cannot be bound (in use, or not allowed): the node did not start. */
  PortUnavailable: 'PORT_UNAVAILABLE',
  /** The node's lease or the actor's hold is no longer valid. */
  LeaseLost: 'LEASE_LOST',
  /** The node gave the actor up (failed upload, conflict, index out of line). */
  ActorGivenUp: 'ACTOR_GIVEN_UP',
  /** No such class, method or route. */
  NotFound: 'NOT_FOUND',
  /** Guest SQL named an internal table or used a refused statement; nothing ran. */
  SqlRefused: 'SQL_REFUSED',
  /**
   * A bound was reached: an actor's queue is full, the process has no file descriptor left, or a
   * tenant creates new actors faster than `newActorsPerTenantPerSecond`; nothing ran, retry later
   * (`details.retryAfterMs`, when given, is how long to wait).
   */
  Overloaded: 'OVERLOADED',
  /** A handler ran past its time limit (counts as a failure). */
  HandlerTimeout: 'HANDLER_TIMEOUT',
  /** A handler threw; the event was rolled back. */
  HandlerFailed: 'HANDLER_FAILED',
  /**
   * The event's handler had begun when its worker was restarted (a handler stuck in synchronous
   * code past the hard limit, this one or another on the same worker): it may have committed, and
   * may have had effects outside the actor. Retry with the same idempotency key.
   */
  OutcomeUnknown: 'OUTCOME_UNKNOWN',
  /** The node is starting (its port is bound, it is not serving yet), stopping or stopped. */
  NodeStopped: 'NODE_STOPPED',
  /** A chain link failed its checks (seal, header, delta or page encoding), or the chain has a gap: the actor is not served. */
  CorruptLink: 'CORRUPT_LINK',
  /**
   * An actor's own state holds what keepwork cannot read (`alarm_indexed`, its WAL cursor, a
   * database file too short): the actor is not served.
   */
  CorruptState: 'CORRUPT_STATE',
  /** A state keepwork's own code must never reach (an `invariant` failed): a bug; the operation stops there. */
  Internal: 'INTERNAL',
  /** An HTTP request body over `httpBodyMaxBytes`. */
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  /** An HTTP request body that did not arrive within `httpBodyTimeoutMs`. */
  RequestTimeout: 'REQUEST_TIMEOUT',
  /** A call's result over `httpResultMaxBytes`: the call ran (and committed), its result is not sent. */
  ResultTooLarge: 'RESULT_TOO_LARGE',
  /** An HTTP method the route does not take (GET on a method call, POST on the alarm). */
  MethodNotAllowed: 'METHOD_NOT_ALLOWED',
  /** A POST whose content-type is not application/json (what a browser's form or a cross-site fetch sends without asking). */
  UnsupportedMediaType: 'UNSUPPORTED_MEDIA_TYPE',
  /** A request to a loopback node whose Host header names another host (a page on a rebound domain name). */
  MisdirectedRequest: 'MISDIRECTED_REQUEST',
  /** The node holding the actor is live but could not be reached (or a routing loop); retry. */
  OwnerUnreachable: 'OWNER_UNREACHABLE',
  /** An idempotency key was used again with another method or other arguments; nothing ran. */
  IdempotencyMismatch: 'IDEMPOTENCY_MISMATCH',
  /** No bearer token, one that matches no entry of the token file, or a forward whose cluster signature fails. */
  Unauthenticated: 'UNAUTHENTICATED',
  /** The token is valid but lacks the right, or the tenant, the request needs. */
  Forbidden: 'FORBIDDEN',
  /**
   * keepwork/client could not reach the node it calls (connection refused or reset, or no answer
   * within requestTimeoutMs): the call may or may not have run. Never an HTTP answer.
   */
  NodeUnreachable: 'NODE_UNREACHABLE',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface KeepworkErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class KeepworkError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: KeepworkErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details ?? {};
  }

  /** A structured-clone-safe form for crossing a worker boundary (the stack goes along: logs name the handler's file). */
  toJSON(): ErrorJSON {
    return { code: this.code, message: this.message, details: this.details, ...(this.stack === undefined ? {} : { stack: this.stack }) };
  }
}

/** A keepwork error as data: what crosses the worker boundary. `stack` is the thrower's (a handler's own frames). */
export interface ErrorJSON {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  stack?: string;
}

function errorClass<C extends ErrorCode>(code: C, name: string) {
  const cls = class extends KeepworkError {
    declare readonly code: C;
    constructor(message: string, options?: KeepworkErrorOptions) {
      super(code, message, options);
    }
  };
  Object.defineProperty(cls, 'name', { value: name });
  Object.defineProperty(cls.prototype, 'name', { value: name });
  return cls;
}

export const PreconditionFailed = errorClass(ErrorCode.PreconditionFailed, 'PreconditionFailed');
export const AmbiguousWrite = errorClass(ErrorCode.AmbiguousWrite, 'AmbiguousWrite');
export const StoreUnavailable = errorClass(ErrorCode.StoreUnavailable, 'StoreUnavailable');
export const BadKey = errorClass(ErrorCode.BadKey, 'BadKey');
export const BadRequest = errorClass(ErrorCode.BadRequest, 'BadRequest');
export const BadConfig = errorClass(ErrorCode.BadConfig, 'BadConfig');
export const BadClass = errorClass(ErrorCode.BadClass, 'BadClass');
export const PortUnavailable = errorClass(ErrorCode.PortUnavailable, 'PortUnavailable');
export const LeaseLost = errorClass(ErrorCode.LeaseLost, 'LeaseLost');
export const ActorGivenUp = errorClass(ErrorCode.ActorGivenUp, 'ActorGivenUp');
export const NotFound = errorClass(ErrorCode.NotFound, 'NotFound');
export const SqlRefused = errorClass(ErrorCode.SqlRefused, 'SqlRefused');
export const Overloaded = errorClass(ErrorCode.Overloaded, 'Overloaded');
export const HandlerTimeout = errorClass(ErrorCode.HandlerTimeout, 'HandlerTimeout');
export const HandlerFailed = errorClass(ErrorCode.HandlerFailed, 'HandlerFailed');
export const OutcomeUnknown = errorClass(ErrorCode.OutcomeUnknown, 'OutcomeUnknown');
export const NodeStopped = errorClass(ErrorCode.NodeStopped, 'NodeStopped');
export const OwnerUnreachable = errorClass(ErrorCode.OwnerUnreachable, 'OwnerUnreachable');
export const CorruptLink = errorClass(ErrorCode.CorruptLink, 'CorruptLink');
export const CorruptState = errorClass(ErrorCode.CorruptState, 'CorruptState');
export const Internal = errorClass(ErrorCode.Internal, 'Internal');
export const PayloadTooLarge = errorClass(ErrorCode.PayloadTooLarge, 'PayloadTooLarge');
export const RequestTimeout = errorClass(ErrorCode.RequestTimeout, 'RequestTimeout');
export const ResultTooLarge = errorClass(ErrorCode.ResultTooLarge, 'ResultTooLarge');
export const MethodNotAllowed = errorClass(ErrorCode.MethodNotAllowed, 'MethodNotAllowed');
export const UnsupportedMediaType = errorClass(ErrorCode.UnsupportedMediaType, 'UnsupportedMediaType');
export const MisdirectedRequest = errorClass(ErrorCode.MisdirectedRequest, 'MisdirectedRequest');
export const IdempotencyMismatch = errorClass(ErrorCode.IdempotencyMismatch, 'IdempotencyMismatch');
export const Unauthenticated = errorClass(ErrorCode.Unauthenticated, 'Unauthenticated');
export const Forbidden = errorClass(ErrorCode.Forbidden, 'Forbidden');
export const NodeUnreachable = errorClass(ErrorCode.NodeUnreachable, 'NodeUnreachable');

/** Each code's class, so an error that arrived as data can be raised as the class a caller matches (`instanceof`). */
const CLASSES: Readonly<Record<ErrorCode, new (message: string, options?: KeepworkErrorOptions) => KeepworkError>> = Object.freeze({
  PRECONDITION_FAILED: PreconditionFailed,
  AMBIGUOUS_WRITE: AmbiguousWrite,
  STORE_UNAVAILABLE: StoreUnavailable,
  BAD_KEY: BadKey,
  BAD_REQUEST: BadRequest,
  BAD_CONFIG: BadConfig,
  BAD_CLASS: BadClass,
  PORT_UNAVAILABLE: PortUnavailable,
  LEASE_LOST: LeaseLost,
  ACTOR_GIVEN_UP: ActorGivenUp,
  NOT_FOUND: NotFound,
  SQL_REFUSED: SqlRefused,
  OVERLOADED: Overloaded,
  HANDLER_TIMEOUT: HandlerTimeout,
  HANDLER_FAILED: HandlerFailed,
  OUTCOME_UNKNOWN: OutcomeUnknown,
  NODE_STOPPED: NodeStopped,
  CORRUPT_LINK: CorruptLink,
  CORRUPT_STATE: CorruptState,
  INTERNAL: Internal,
  PAYLOAD_TOO_LARGE: PayloadTooLarge,
  REQUEST_TIMEOUT: RequestTimeout,
  RESULT_TOO_LARGE: ResultTooLarge,
  METHOD_NOT_ALLOWED: MethodNotAllowed,
  UNSUPPORTED_MEDIA_TYPE: UnsupportedMediaType,
  MISDIRECTED_REQUEST: MisdirectedRequest,
  OWNER_UNREACHABLE: OwnerUnreachable,
  IDEMPOTENCY_MISMATCH: IdempotencyMismatch,
  UNAUTHENTICATED: Unauthenticated,
  FORBIDDEN: Forbidden,
  NODE_UNREACHABLE: NodeUnreachable,
});

/** A new error of `code`'s class (`errorOf('FORBIDDEN', …) instanceof Forbidden`). */
export function errorOf(code: ErrorCode, message: string, options?: KeepworkErrorOptions): KeepworkError {
  return new CLASSES[code](message, options);
}

/**
 * Rebuilds a typed error from its structured-clone form (the worker boundary). It keeps the stack
 * it was sent with — where the error was thrown in the worker (a handler's file and line), not
 * where it was revived — so a log line of the revived error points at the code that failed.
 */
export function reviveError(data: ErrorJSON): KeepworkError {
  const e = new KeepworkError(data.code, data.message, { details: data.details ?? {} });
  if (data.stack !== undefined) e.stack = data.stack;
  return e;
}

/** True when `e` carries keepwork's `code` (a live error, or one that crossed a thread as data). */
export function isKeepworkError(e: unknown, code?: ErrorCode): e is { code: ErrorCode; message: string } {
  if (typeof e !== 'object' || e === null || !('code' in e)) return false;
  const c = (e as { code: unknown }).code;
  if (typeof c !== 'string' || !Object.values(ErrorCode).includes(c as ErrorCode)) return false;
  return code === undefined || c === code;
}

/** Whether `e` (live, or as data from a worker) is OVERLOADED for want of `resource` (its `details.resource`). */
export function isOverloadedBy(e: unknown, resource: string): e is { code: 'OVERLOADED'; message: string } {
  return isKeepworkError(e, 'OVERLOADED') && (e as { details?: { resource?: unknown } }).details?.resource === resource;
}
