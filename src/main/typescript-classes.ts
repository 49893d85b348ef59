/**
 * TypeScript class modules load through tsx (src/workers/class-loader.ts), an optional peer
 * dependency of the package: when a class is a `.ts` module and tsx cannot be found from here
 * (where the workers look for it too), the node refuses to start and says what to do, instead of
 * every call to that class failing with "Cannot find package 'tsx'".
 */
import { BadConfig } from '../core/errors.js';

const TYPESCRIPT = /\.(ts|mts|cts)$/;

/** Throws BAD_CONFIG when a class module (file URL) is TypeScript and tsx is not installed. */
export function checkTypeScriptLoader(classUrls: Readonly<Record<string, string>>, canLoad: () => boolean = tsxInstalled): void {
  const ts = Object.entries(classUrls).filter(([, url]) => TYPESCRIPT.test(new URL(url).pathname));
  if (ts.length === 0 || canLoad()) return;
  const [name, url] = ts[0]!;
  throw new BadConfig(
    `classes.${name}: ${url} is TypeScript, which keepwork loads through tsx, and tsx is not installed: ` +
      'install it in your app (npm install tsx) or compile your classes to JavaScript and give the .js files',
    { details: { className: name, module: url, missing: 'tsx' } },
  );
}

function tsxInstalled(): boolean {
  try {
    import.meta.resolve('tsx/esm/api');
    return true;
  } catch {
    return false;
  }
}
