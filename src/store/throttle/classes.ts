/**
 * The request classes the governor keeps a window for (store/throttle/governor.ts), from a
 * request's operation and key area (`areaOf`, store/request-counts.ts). S3 throttles per key
 * prefix, and reads apart from writes, so each class is a prefix's writes, or reads, or lists:
 *
 *   lease          any request under nodes/ (lease renewals, fences, the node directory):
 *                  no window, never queued, never paused — a node must not lose its lease
 *                  because its own drain made the bucket throttle it
 *   index_writes   put, delete, deleteMany under alarms/ (the alarm index)
 *   chain_uploads  put under state/ (actors' chain links)
 *   other_writes   put under holds/ and anywhere else
 *   deletes        delete, deleteMany outside alarms/ and nodes/ (pruned links, released holds)
 *   reads          get, head
 *   lists          list
 */
import { areaOf } from '../request-counts.js';

export const REQUEST_CLASSES = ['index_writes', 'chain_uploads', 'other_writes', 'deletes', 'reads', 'lists'] as const;
export type RequestClass = (typeof REQUEST_CLASSES)[number];
export type StoreVerb = 'get' | 'head' | 'put' | 'delete' | 'deleteMany' | 'list';

/** The window a request goes through; 'lease' for one that goes around every window. */
export function requestClass(verb: StoreVerb, key: string | undefined): RequestClass | 'lease' {
  const area = areaOf(key);
  if (area === 'nodes') return 'lease';
  if (verb === 'get' || verb === 'head') return 'reads';
  if (verb === 'list') return 'lists';
  if (area === 'alarms') return 'index_writes';
  if (verb !== 'put') return 'deletes';
  return area === 'state' ? 'chain_uploads' : 'other_writes';
}
