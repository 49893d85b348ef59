/**
 * Whether a node may start with the doors it was given (docs/security.md "Starting a node"):
 *
 *   host loopback                       anything goes (a test cluster on 127.0.0.1 needs no files)
 *   host not loopback, insecureNoAuth   starts, with a warning at every start
 *   host not loopback, tokens + secret  starts
 *   host not loopback, otherwise        refused (BAD_CONFIG): no tokens means anyone calls any
 *                                       actor; tokens without a cluster secret means forwards
 *                                       carry no identity a holder could trust
 *
 * On loopback, tokens without a cluster secret start with a warning: a forward from such a node
 * is unsigned, so a holder that checks tokens refuses it (401).
 */
import { isIP } from 'node:net';

export interface Doors {
  host: string;
  tokens: boolean;
  clusterSecret: boolean;
  insecureNoAuth: boolean;
}

export type DoorDecision = { start: true; warnings: string[] } | { start: false; why: string };

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

export function doorDecision(d: Doors): DoorDecision {
  const warnings: string[] = [];
  if (isLoopback(d.host)) {
    if (d.tokens && !d.clusterSecret)
      warnings.push(
        'tokens without a cluster secret: calls this node forwards carry no identity, and holders that check tokens refuse them',
      );
    return { start: true, warnings };
  }
  if (d.insecureNoAuth) {
    const open = [d.tokens ? '' : 'no tokens', d.clusterSecret ? '' : 'no cluster secret'].filter(Boolean).join(', ');
    warnings.push(
      `--insecure-no-auth: listening on ${d.host}${open ? ` with ${open}` : ''}; anyone who reaches the port may call any actor`,
    );
    return { start: true, warnings };
  }
  if (!d.tokens)
    return {
      start: false,
      why: `host ${d.host} is not loopback and no token file was given: pass --auth-file (startNode({ auth })) and --cluster-secret-file, or --insecure-no-auth to serve it open`,
    };
  if (!d.clusterSecret)
    return {
      start: false,
      why: `host ${d.host} is not loopback and no cluster secret was given: pass --cluster-secret-file (startNode({ clusterSecret })) so forwarded calls are signed, or --insecure-no-auth`,
    };
  return { start: true, warnings };
}
