/**
 * The store's ceiling for alarm deliveries: how many deliveries per second the bucket itself
 * could serve if it did nothing else, given the store requests one delivery costs.
 *
 *   storeRates(store, inFlight)   ops/s of each operation at that concurrency (bench/store's
 *                                 method: 100-byte bodies, each object in its own folder; list =
 *                                 one such folder, as a delivery lists one actor's chain or its
 *                                 entries at one time)
 *   ceiling(rates, perDelivery)   1 / Σ_op (requests of op per delivery / ops/s of op)
 *
 * The drain rate (all live nodes together) divided by this ceiling says how close the drain
 * path comes to what the store allows. head is priced as a get, put_conditional as a create,
 * delete_many as a delete.
 */
import type { ObjectStore } from '../../src/store/types.js';
import { listAll } from '../../src/store/keys.js';
import { measure } from '../lib.js';

export type Rates = Record<'get' | 'put' | 'create' | 'list' | 'delete', number>;

export async function storeRates(store: ObjectStore, inFlight: number, ops: number): Promise<Rates> {
  const prefix = `bench-ceiling-${process.pid}-${Date.now()}/`;
  const body = new Uint8Array(100).fill(7);
  const folder = (i: number) => `${prefix}k/${String(i).padStart(6, '0')}/`;
  const key = (i: number) => `${folder(i)}o`;
  const put = await measure(ops, inFlight, (i) => store.put(key(i), body));
  const create = await measure(ops, inFlight, (i) => store.put(`${prefix}c/${i}`, body, { ifNoneMatch: '*' }));
  const get = await measure(ops, inFlight, (i) => store.get(key(i % ops)));
  const list = await measure(ops, inFlight, (i) => store.list({ prefix: folder(i % ops), maxKeys: 1000 }));
  const del = await measure(ops, inFlight, (i) => store.delete(key(i)));
  const rest: string[] = [];
  for await (const k of listAll(store, { prefix })) rest.push(k);
  for (let i = 0; i < rest.length; i += 1000) await store.deleteMany(rest.slice(i, i + 1000));
  return { get: get.opsPerSec, put: put.opsPerSec, create: create.opsPerSec, list: list.opsPerSec, delete: del.opsPerSec };
}

const PRICE: Record<string, keyof Rates> = {
  get: 'get',
  head: 'get',
  put: 'put',
  put_conditional: 'create',
  list: 'list',
  delete: 'delete',
  delete_many: 'delete',
};

/** Deliveries per second the store could serve, from the requests per delivery by operation. */
export function ceiling(rates: Rates, perDelivery: Record<string, number>): number {
  let secondsPerDelivery = 0;
  for (const [op, n] of Object.entries(perDelivery)) secondsPerDelivery += n / rates[PRICE[op] ?? 'get'];
  return secondsPerDelivery > 0 ? 1 / secondsPerDelivery : Infinity;
}
