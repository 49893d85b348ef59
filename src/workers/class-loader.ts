/**
 * Loads actor class modules inside a worker: `import()` once per class, the default export
 * checked to be an actor definition. Unknown classes and bad modules reject with typed errors.
 */
import { BadConfig, NotFound } from '../core/errors.js';
import { checkDefinition, type ActorDefinition } from './define-actor.js';

export function classLoader(classes: Readonly<Record<string, string>>): (className: string) => Promise<ActorDefinition> {
  const cache = new Map<string, Promise<ActorDefinition>>();
  return (className) => {
    if (!Object.prototype.hasOwnProperty.call(classes, className)) {
      return Promise.reject(new NotFound(`this node serves no actor class ${JSON.stringify(className)}`));
    }
    let loading = cache.get(className);
    if (!loading) {
      loading = load(className, classes[className]!);
      cache.set(className, loading);
    }
    return loading;
  };
}

async function load(className: string, url: string): Promise<ActorDefinition> {
  let mod: { default?: unknown };
  try {
    mod = (await importModule(url)) as { default?: unknown };
  } catch (e) {
    throw new BadConfig(`actor class ${className}: cannot load ${url}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const problem = checkDefinition(mod.default);
  if (problem) throw new BadConfig(`actor class ${className} (${url}): its default export is not an actor definition: ${problem}`);
  return mod.default as ActorDefinition;
}

/**
 * TypeScript class modules (examples, tests run from source) go through tsx's own import: on
 * Node 20 the loader hooks of `--import tsx` do not reach `import()` of a `.ts` file in a worker
 * thread. tsx is an optional peer dependency of the package (the node checks at start that it is
 * installed when a class is TypeScript: src/main/typescript-classes.ts); `.js` classes never load it.
 */
async function importModule(url: string): Promise<unknown> {
  if (!/\.(ts|mts|cts)$/.test(new URL(url).pathname)) return import(url);
  const { tsImport } = (await import('tsx/esm/api')) as { tsImport: (specifier: string, parent: string) => Promise<unknown> };
  return tsImport(url, import.meta.url);
}
