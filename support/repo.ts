/** The repository's root folder (with a trailing separator), for paths to its files: src/cli/cli.ts, test/fixtures/…. */
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('..', import.meta.url));
