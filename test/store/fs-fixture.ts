/**
 * What the folder store's tests share: a store on a fresh temp folder (removed when it is done,
 * or when the file's tests end), the tree of files under a folder, and listings in small pages.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FsStore } from '../../src/store/fs/store.js';
import { tempDirs } from '../helpers/temp.js';

/** A fresh temp folder, removed when the test file's tests end at the latest. */
export const tempRoot = tempDirs('kw-fs-');

/** Listings in pages of 7 keys: a listing of more crosses pages. */
export const SMALL_PAGES = { pageKeys: 7 };

/** Every path under `dir`, relative, sorted. */
export function tree(dir: string, rel = ''): string[] {
  return readdirSync(join(dir, rel), { withFileTypes: true })
    .flatMap((d) => [join(rel, d.name) + (d.isDirectory() ? '/' : ''), ...(d.isDirectory() ? tree(dir, join(rel, d.name)) : [])])
    .sort();
}

/** Runs `fn` on a store on a fresh folder, then closes the store and removes the folder. */
export async function withStore(fn: (store: FsStore, root: string) => Promise<void>): Promise<void> {
  const root = tempRoot();
  const store = new FsStore(root);
  try {
    await fn(store, root);
  } finally {
    await store.close();
    rmSync(root, { recursive: true, force: true });
  }
}
