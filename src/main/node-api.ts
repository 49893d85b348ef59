/**
 * What a keepwork node offers: the options of `startNode`, the public node and actor handle, and
 * the routing surface the HTTP layer and the status page use (what the sweep needs of a node is
 * alarms/sweep.ts `SweepHost`).
 */
import type { ProtocolRules } from '../alarms/rules.js';
import type { SchedulerLike } from 'rxjs';
import type { ActorAddress } from '../core/address.js';
import type { ActorHandle, ActorShape } from '../core/actor-handle.js';
import type { Logger } from '../core/logger.js';
import type { Random } from '../core/random.js';
import type { ObjectStore } from '../store/types.js';
import type { KeepworkOptions, ResolvedConfig, Settings } from '../core/config.js';
import type { ClusterKey } from '../core/cluster-signature.js';
import type { TokenFile, TokenSet } from '../core/tokens.js';
import type { ServerTls, TlsOptions } from '../core/tls-material.js';
import type { NodeMetrics } from './metrics.js';

export interface StartNodeOptions extends KeepworkOptions {
  /**
   * Class name → the module whose default export is `defineActor(...)`: a file URL (a `URL` or a
   * `file:` string, e.g. `new URL('./counter.js', import.meta.url)`) or a path, absolute or relative
   * to `classBase`. A `.ts` module needs tsx installed (an optional peer dependency).
   */
  classes: Record<string, string | URL>;
  /**
   * What relative class paths resolve against: a folder path, or a file URL such as the caller's
   * `import.meta.url` (then `./counter.js` is the file beside the caller). Default: the working directory.
   */
  classBase?: string | URL;
  /** Bucket URL (file://, a path, s3://, sqlite:FILE, memory:). Default: the folder `bucket` inside `dataDir`. */
  bucket?: string;
  /** Where actor databases and node.json live. Default: ./data. */
  dataDir?: string;
  /** Tenants this node serves; all when absent. */
  tenants?: string[];
  nodeId?: string;
  /** HTTP port; 0 picks a free one; no HTTP server when absent (then no node can forward to it). */
  port?: number;
  host?: string;
  /**
   * The URL other nodes call this one at, carried in its lease (http or https, a host and a port);
   * default: the listen address. Needed when `host` is unspecified (0.0.0.0, ::).
   */
  advertise?: string;
  /**
   * The networks calls are forwarded to (IPv4 and IPv6 CIDRs, e.g. `['10.0.0.0/8']`, or one
   * comma-separated string): a holder whose address, or any address its host name resolves to, is
   * outside is answered OWNER_UNREACHABLE without being asked (docs/security.md). Default: anywhere.
   */
  peersAllow?: string | string[];
  logger?: Logger;
  /**
   * Bearer tokens and their rights (docs/security.md): a token file's path, or its parsed value.
   * Without it every request is served unauthenticated, which a node whose `host` is not loopback
   * refuses unless `insecureNoAuth` is set.
   */
  auth?: string | TokenFile;
  /** The cluster secret every node shares (at least 32 bytes): signs forwards and their replies. */
  clusterSecret?: string | Uint8Array;
  /** Serve a non-loopback `host` without tokens or cluster secret (logged as a warning at every start). */
  insecureNoAuth?: boolean;
  /**
   * TLS (docs/security.md "TLS"): `cert` and `key` serve HTTPS (and the node must advertise an
   * https URL); `ca` is what https peers' certificates must chain to (default: the system store);
   * `clientCert`/`clientKey` are presented to a peer that asks (default: `cert`/`key`);
   * `requireClientCert` asks every client for a certificate chaining to `ca`. Each is a PEM file's
   * path or the PEM itself; a bad one fails the start (BAD_CONFIG naming it).
   */
  tls?: TlsOptions;
}

export type { ActorHandle, IdempotentActorHandle, ActorShape, Stub } from '../core/actor-handle.js';

export interface KeepworkNode {
  readonly nodeId: string;
  readonly epoch: number;
  /** The HTTP base URL, when serving HTTP. */
  readonly url: string | undefined;
  readonly config: ResolvedConfig;
  readonly store: ObjectStore;
  /**
   * A handle on the actor at `address` (the node routes its calls to the holder). Name the class's
   * type to get typed stubs: `node.actor<typeof Counter>('acme/Counter/hits').plain.add(5)`
   * (core/actor-handle.ts).
   */
  actor<D extends ActorShape = ActorShape>(address: string | { tenant: string; className: string; name: string }): ActorHandle<D>;
  /** Pending alarms in this node's timer. */
  pendingAlarms(): number;
  /** Actors this node holds. */
  heldActors(): number;
  stop(): Promise<void>;
}

/** What the HTTP layer and the status page need beyond the public node. */
export interface RoutingNode extends KeepworkNode {
  /** Prometheus text of this node's metrics. */
  metricsText(): Promise<string>;
  /** Alarm deliveries queued or running on this node (keepwork_delivery_backlog). */
  deliveryBacklog(): number;
  readonly metrics: NodeMetrics;
  /**
   * `idempotencyKey`: only with `durable` (docs/guide.md "Idempotent durable calls"). `caller`: the
   * verified token name a forward carries to the holder ('' when nobody was authenticated).
   */
  request(
    address: ActorAddress,
    method: string,
    args: unknown[],
    durable: boolean,
    hops: number,
    idempotencyKey?: string,
    caller?: string,
  ): Promise<unknown>;
  readAlarm(address: ActorAddress, hops: number, caller?: string): Promise<number | null>;
}

/** A running HTTP server of a node. */
export interface HttpServer {
  url: string;
  close(): Promise<void>;
}

/** A node's HTTP server, listening before the node joins: it answers 503 NODE_STOPPED until `serve` hands it the node. */
export interface BoundHttp extends HttpServer {
  /** Starts serving `node`'s API (once); `log` is the node's logger from then on. */
  serve(node: RoutingNode, log: Logger): void;
}

/**
 * Binds a node's HTTP port (src/http/server.ts `startHttp`) before the node writes its lease, so a
 * busy port fails the start (PORT_UNAVAILABLE) with nothing written. The layer above the main
 * thread hands it to `startNodeWith`, so the main thread never imports the HTTP layer.
 */
export type FrontDoor = (settings: FrontDoorSettings) => Promise<BoundHttp>;

/** The front door's bounds (docs/tuning.md): how long a request may take to arrive, how many at once, how large a result. */
export type HttpLimits = Settings<'httpBodyTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpConnectionsMax' | 'httpResultMaxBytes'>;

export interface FrontDoorSettings {
  port: number;
  host: string;
  bodyMaxBytes: number;
  limits: HttpLimits;
  log: Logger;
  /** The tokens requests must present; none: nothing is checked. */
  tokens?: TokenSet;
  /** The cluster secret forwarded requests are signed with (and replies to them). */
  clusterKey?: ClusterKey;
  /** Serve HTTPS with this certificate and key (and, with `requestCert`, ask clients for theirs). */
  tls?: ServerTls;
}

/** Test seams (the deterministic simulator): a seeded Random and a virtual-time RxJS scheduler. */
export interface NodeSeams {
  random?: Random;
  scheduler?: SchedulerLike;
  /** Hears every rejoin after a fence (the simulator counts them). */
  onRejoin?: (epoch: number) => void;
  /** The sweep's rules (SAFE_RULES by default; the simulator's unsafe variants turn one off). */
  rules?: ProtocolRules;
}

/**
 * TEST-ONLY: a node that breaks one protocol rule on purpose, so that the chaos run
 * (test/chaos/node-entry.ts, docs/testing.md) can show its checker catches the breakage. Not an
 * option of `startNode` and not documented for users; production never builds one.
 */
export interface UnsafeTestSeams {
  /** Handed to the workers' pipeline and to the sweep instead of SAFE_RULES. */
  rules?: ProtocolRules;
  /** The node's lease believes itself valid this much longer than leasePeriodMs − skewBoundMs. */
  leaseOverstayMs?: number;
  /**
   * The node's clock (main thread and workers) reads this much ahead of the machine's (negative:
   * behind). Within `skewBoundMs` of every other node's, the protocol stays safe.
   */
  clockOffsetMs?: number;
  /** A forward to a URL this returns true for gets no answer: it fails after forwardTimeoutMs (a partition). */
  forwardDropped?: (url: string) => boolean;
}
