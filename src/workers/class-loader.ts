/**
 * Loads actor class modules: `import()` once per class, the default export checked to be an
 * actor definition. Unknown classes reject with NOT_FOUND, bad modules with BAD_CLASS naming the
 * class, the file and what is wrong. A worker loads its classes at their first event; the main
 * thread loads every class once at start (`checkClasses`), so a bad module fails the start.
 */
import { fileURLToPath } from 'node:url';
import { BadClass, NotFound } from '../core/errors.js';
import { checkDefinition, hasMethod, type ActorDefinition } from './define-actor.js';

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

/**
 * Loads every class (name → module URL) and checks its default export; rejects with one BAD_CLASS
 * that names each bad class, its file and what is wrong (`details.classes`: one entry per class).
 * Resolves to each class's method names (the main thread refuses a call to any other before it
 * takes the actor).
 */
export async function checkClasses(classes: Readonly<Record<string, string>>): Promise<Record<string, string[]>> {
  const methods: Record<string, string[]> = {};
  const outcomes = await Promise.all(
    Object.entries(classes).map(([name, url]) =>
      load(name, url).then(
        (def) => void (methods[name] = Object.keys(def.methods).filter((m) => hasMethod(def, m))),
        (e: unknown) => (e instanceof BadClass ? e : badClass(name, url, `cannot load it: ${messageOf(e)}`, e)),
      ),
    ),
  );
  const bad = outcomes.filter((e) => e !== undefined);
  if (bad.length === 1) throw bad[0]!;
  if (bad.length > 1) {
    throw new BadClass(`${bad.length} actor classes are bad:\n  ${bad.map((e) => e.message).join('\n  ')}`, {
      details: { classes: bad.map((e) => e.details) },
    });
  }
  return methods;
}

async function load(className: string, url: string): Promise<ActorDefinition> {
  let mod: { default?: unknown };
  try {
    mod = (await importModule(url)) as { default?: unknown };
  } catch (e) {
    throw badClass(className, url, `cannot load it: ${messageOf(e)}`, e);
  }
  if (mod.default === undefined)
    throw badClass(className, url, 'it has no default export (end it with `export default defineActor({...})`)');
  const problem = checkDefinition(mod.default);
  if (problem) throw badClass(className, url, `its default export is not a defineActor definition: ${problem}`);
  return mod.default as ActorDefinition;
}

/** `actor class Counter (/app/counter.js): <problem>`, with the class, path and problem as details. */
function badClass(className: string, url: string, problem: string, cause?: unknown): InstanceType<typeof BadClass> {
  const path = url.startsWith('file:') ? fileURLToPath(url) : url;
  return new BadClass(`actor class ${className} (${path}): ${problem}`, { cause, details: { className, path, problem } });
}

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
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
