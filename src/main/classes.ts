/**
 * Validates the `classes` option: class names as core/address.ts checks them, each module given as an
 * absolute or relative path (against the working directory) or a file URL that exists
 * (BAD_CLASS when it does not; `checkClasses` in src/workers/class-loader.ts then loads each).
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { validateClassName } from '../core/address.js';
import { BadClass, BadConfig } from '../core/errors.js';

export function resolveClasses(classes: unknown): Record<string, string> {
  if (typeof classes !== 'object' || classes === null || Object.keys(classes).length === 0) {
    throw new BadConfig('classes must name at least one actor class: { ClassName: "/path/to/module.js" }');
  }
  const out: Record<string, string> = {};
  for (const [name, where] of Object.entries(classes as Record<string, unknown>)) {
    try {
      validateClassName(name);
    } catch (e) {
      throw new BadConfig(`classes: ${(e as Error).message}`);
    }
    if (typeof where !== 'string' || where === '') throw new BadConfig(`classes.${name} must be a module path or file URL`);
    const path = where.startsWith('file:') ? fileURLToPath(where) : resolve(where);
    if (!existsSync(path)) {
      const problem = 'no such module file';
      throw new BadClass(`actor class ${name} (${path}): ${problem}`, { details: { className: name, path, problem } });
    }
    out[name] = pathToFileURL(path).href;
  }
  return out;
}
