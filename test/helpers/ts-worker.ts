/**
 * Eval code that runs a TypeScript file as a worker thread's entry (`new Worker(tsWorkerEntry(url),
 * { eval: true })`). Here (Node 20.20, tsx 4.23) a worker does not inherit the `--import tsx`
 * hooks, whether its entry is a .ts file, a .mjs file or eval code; registering tsx inside the
 * worker does work.
 */
export function tsWorkerEntry(file: URL): string {
  return `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); })`;
}
