/**
 * A node:test reporter (scripts/run-tests.ts adds it beside the usual one) that writes one JSON
 * line per failed, skipped or todo test to its destination: { kind, file, path, reason }, where
 * path is the enclosing suites and the test's name. run-tests.ts prints them as the run's last
 * lines. A failure's reason is its error's message with the messages of its causes, up to
 * REASON_LINES_MAX lines: the line after "node a exited (1) before serving:" is the why. A suite
 * that failed only because a test in it failed is left out (its test is listed).
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
      yield line('failed', file, path, `${error?.failureType ? `[${error.failureType}] ` : ''}${reasonOf(error)}`);
    }
  }
}

const REASON_LINES_MAX = 12;
const CAUSES_MAX = 4;

/** The test's error (node:test wraps it: its `cause`), then each cause's message, cut to REASON_LINES_MAX lines. */
function reasonOf(error) {
  const messages = [];
  let e = error?.cause ?? error;
  for (let depth = 0; e !== undefined && e !== null && depth < CAUSES_MAX; depth++) {
    const message = typeof e === 'string' ? e : String(e.message ?? e);
    messages.push(depth === 0 ? message : `caused by: ${message}`);
    e = typeof e === 'object' ? e.cause : undefined;
  }
  const lines = (messages.join('\n') || 'failed').split('\n').filter((l) => l.trim() !== '');
  const cut = lines.length - REASON_LINES_MAX;
  return (cut > 0 ? [...lines.slice(0, REASON_LINES_MAX), `… (${cut} more lines)`] : lines).join('\n    ');
}

function line(kind, file, path, reason) {
  return JSON.stringify({ kind, file, path, reason }) + '\n';
}
