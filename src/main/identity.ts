/**
 * The node's identity, kept in its data dir (`node.json`): a stable `nodeId`, an `epoch` that
 * grows by one at every start (docs/architecture.md), and `dataDirId`, a random name of the data dir
 * made once, which the node's lease record carries: a node that holds the data dir's lock
 * (data-dir-lock.ts) and finds a live lease of its own data dir knows that run is dead. Written
 * atomically (temp + rename).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BadConfig } from '../core/errors.js';
import { randomHex, type Random } from '../core/random.js';

export interface NodeIdentity {
  nodeId: string;
  epoch: number;
  dataDirId: string;
}

const NODE_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

export function nextIdentity(dataDir: string, random: Random, requested?: string): NodeIdentity {
  if (requested !== undefined && !NODE_ID_RE.test(requested))
    throw new BadConfig(`nodeId ${JSON.stringify(requested)} must match [A-Za-z0-9_-]{1,64}`);
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'node.json');
  const previous = read(path);
  if (previous && requested !== undefined && previous.nodeId !== requested) {
    throw new BadConfig(`data dir ${dataDir} belongs to node ${previous.nodeId}, not ${requested}; use another dataDir or drop nodeId`);
  }
  const identity: NodeIdentity = {
    nodeId: requested ?? previous?.nodeId ?? `n-${randomHex(random, 6)}`,
    epoch: (previous?.epoch ?? 0) + 1,
    dataDirId: previous?.dataDirId ?? randomHex(random, 8),
  };
  writeFileSync(path + '.tmp', JSON.stringify(identity) + '\n');
  renameSync(path + '.tmp', path);
  return identity;
}

function read(path: string): (Omit<NodeIdentity, 'dataDirId'> & { dataDirId?: string }) | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const data = JSON.parse(text) as Partial<NodeIdentity>;
  if (typeof data.nodeId !== 'string' || !Number.isSafeInteger(data.epoch)) throw new BadConfig(`${path} is not a node identity file`);
  return { nodeId: data.nodeId, epoch: data.epoch!, dataDirId: typeof data.dataDirId === 'string' ? data.dataDirId : undefined };
}
