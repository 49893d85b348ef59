/**
 * A node:test reporter (scripts/run-tests.ts adds it beside the usual one) that writes one JSON
 * line per failed, skipped or todo test to its destination: { kind, file, path, reason }, where
 * path is the enclosing suites and the test's name. run-tests.ts prints them as the run's last
 * lines. A suite that failed only because a test in it failed is left out (its test is listed).
 * Plain JavaScript: node loads reporters before any --import hook (tsx) is in place.
 */
export default async function* summary(source) {
  const stacks = new Map();
  for await (const event of source) {
    if (event.type !== 'test:start' && event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const data = event.data;
    const file = data.file ?? '';
    const stack = stacks.get(file) ?? [];
    stacks.set(file, stack);
    stack.length = data.nesting;
    if (event.type === 'test:start') {
      stack.push(data.name);
      continue;
    }
    const path = [...stack, data.name];
    if (data.skip !== undefined && data.skip !== false) {
      yield line('skipped', file, path, typeof data.skip === 'string' ? data.skip : '');
    } else if (data.todo !== undefined && data.todo !== false) {
      yield line('todo', file, path, typeof data.todo === 'string' ? data.todo : '');
    } else if (event.type === 'test:fail') {
      const error = data.details?.error;
      if (error?.failureType === 'subtestsFailed') continue;
      const cause = error?.cause instanceof Error ? error.cause.message : typeof error?.cause === 'string' ? error.cause : undefined;
      const message = String(cause ?? error?.message ?? 'failed').split('\n')[0];
      yield line('failed', file, path, `${error?.failureType ? `[${error.failureType}] ` : ''}${message}`);
    }
  }
}

function line(kind, file, path, reason) {
  return JSON.stringify({ kind, file, path, reason }) + '\n';
}
