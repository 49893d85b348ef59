/**
 * `keepwork bucket migrate --bucket <folder>`: converts a folder bucket written by an older
 * keepwork to the current on-disk format (src/store/fs/migrate.ts). Run it once with every node
 * that uses the bucket stopped; re-running it is harmless. S3 and SQLite buckets have no such format.
 */
import { BadRequest } from '../core/errors.js';
import { FS_FORMAT, migrateFsBucket } from '../store/fs/store.js';
import { localBucket } from '../store/open.js';

export function bucketMigrateCommand(o: { bucket: string }): void {
  const local = localBucket(o.bucket);
  if (local?.kind !== 'folder') throw new BadRequest(`only folder buckets have an on-disk format to convert; ${o.bucket} is not one`);
  const root = local.path;
  const { from, moved } = migrateFsBucket(root);
  if (from === FS_FORMAT) console.log(`${root} is already in on-disk format ${FS_FORMAT}; nothing to do`);
  else console.log(`${root}: on-disk format ${from} → ${FS_FORMAT}, ${moved} folders and objects moved`);
}
