/** An actor's hold record and a node's record, read from the bucket (null when there is none). */
import { parseAddress } from '../../src/core/address.js';
import { decodeHold, decodeNode, holdKey, nodeKey, type HoldRecord, type NodeRecord } from '../../src/leases/records.js';
import type { ObjectStore } from '../../src/store/types.js';

export async function holdOf(store: ObjectStore, address: string): Promise<HoldRecord | null> {
  const obj = await store.get(holdKey(parseAddress(address)));
  return obj ? decodeHold(obj.body) : null;
}

export async function nodeRecord(store: ObjectStore, nodeId: string): Promise<NodeRecord | null> {
  const obj = await store.get(nodeKey(nodeId));
  return obj ? decodeNode(obj.body) : null;
}
