/**
 * FsStore runs the shared ObjectStore conformance suite (conformance.ts) on a fresh temp folder
 * per case; `reopen` is a second client on the same folder.
 */
import { rmSync } from 'node:fs';
import { FsStore } from '../../src/store/fs/store.js';
import { runConformance } from './conformance.js';
import { tempRoot } from './fs-fixture.js';

runConformance('fs', async () => {
  const root = tempRoot();
  const store = new FsStore(root);
  const others: FsStore[] = [];
  return {
    store,
    reopen: async () => {
      const other = new FsStore(root);
      others.push(other);
      return other;
    },
    cleanup: async () => {
      await store.close();
      for (const o of others) await o.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
});
