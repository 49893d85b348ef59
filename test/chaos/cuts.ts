/**
 * The chaos run's partition switches: files in a node slot's cut folder, written and removed by the
 * harness (faults.ts), read by the node on every request (the slot keeps its folder across runs).
 *
 *   <cutDir>/bucket       the node's `fault+` wrapper refuses every request while it exists (cutFile)
 *   <cutDir>/bucket-writes  … every write, reads served (cutWritesFile)
 *   <cutDir>/bucket-hold  … holds every write outside the alarm index until it is gone (holdWritesFile)
 *   <cutDir>/fsync-fail   the folder bucket's fsyncs fail with EIO (fsyncFailFile)
 *   <cutDir>/calm         the node's `fault+` profile injects nothing (calmFile): a race's calm span
 *   <cutDir>/peer-<port>  the node's forwards to the node listening on <port> get no answer
 */
import { join } from 'node:path';

export const bucketCutFile = (cutDir: string) => join(cutDir, 'bucket');

export const writeCutFile = (cutDir: string) => join(cutDir, 'bucket-writes');

export const holdWritesFile = (cutDir: string) => join(cutDir, 'bucket-hold');

export const fsyncFailFile = (cutDir: string) => join(cutDir, 'fsync-fail');

export const calmFile = (cutDir: string) => join(cutDir, 'calm');

export const peerCutFile = (cutDir: string, url: string) => join(cutDir, `peer-${new URL(url).port}`);
