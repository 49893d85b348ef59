/**
 * Validates the `classes` option: class names as core/address.ts checks them, each module given as a file URL
 * (a `URL` or a `file:` string, e.g. `new URL('./counter.js', import.meta.url)`) or a path, absolute
 * or relative to `base` (a folder path, or a file URL such as the caller's `import.meta.url`; the
 * working directory when absent), that exists (BAD_CLASS when it does not; `checkClasses` in
 * src/workers/class-loader.ts then loads each). TypeScript modules need tsx (typescript-classes.ts).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { validateClassName } from '../core/address.js';
import { BadClass, BadConfig } from '../core/errors.js';
import { checkTypeScriptLoader } from './typescript-classes.js';

export function resolveClasses(classes: unknown, base?: string | URL): Record<string, string> {
  if (typeof classes !== 'object' || classes === null || Object.keys(classes).length === 0) {
    throw new BadConfig(
      'classes must name at least one actor class: { ClassName: "/path/to/module.js" }, on the command line --class Name=path/to/module.js',
    );
  }
  const out: Record<string, string> = {};
  for (const [name, where] of Object.entries(classes as Record<string, unknown>)) {
    try {
      validateClassName(name);
    } catch (e) {
      throw new BadConfig(`classes: ${(e as Error).message}`);
    }
    const path = modulePath(name, where, base);
    if (!existsSync(path)) {
      const problem = 'no such module file';
      throw new BadClass(`actor class ${name} (${path}): ${problem}`, { details: { className: name, path, problem } });
    }
    out[name] = pathToFileURL(path).href;
  }
  checkTypeScriptLoader(out);
  return out;
}

function modulePath(name: string, where: unknown, base: string | URL | undefined): string {
  if (where instanceof URL || (typeof where === 'string' && where.startsWith('file:'))) return fileOf(`classes.${name}`, where);
  if (typeof where !== 'string' || where === '') throw new BadConfig(`classes.${name} must be a module path or file URL`);
  if (base === undefined) return resolve(where);
  if (base instanceof URL || base.startsWith('file:')) return fileOf(`classes.${name}`, new URL(where, base));
  return resolve(base, where);
}

function fileOf(what: string, url: string | URL): string {
  try {
    return fileURLToPath(url);
  } catch (e) {
    throw new BadConfig(`${what}: not a file URL ${String(url)}: ${(e as Error).message}`);
  }
}
