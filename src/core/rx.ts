/**
 * The RxJS operators keepwork uses, imported one module each: `import … from 'rxjs'` loads all of
 * its ~220 CommonJS modules, these ~55 (with what they use), which takes ~0.14 s of CPU off the
 * import of the package, on the path of every start (docs/benchmarks.md, peers). The deep paths
 * are RxJS 7's `./internal/*` exports; every other module imports them from here, so an RxJS
 * upgrade changes one file.
 */
export { defer } from 'rxjs/internal/observable/defer';
export { from } from 'rxjs/internal/observable/from';
export { race } from 'rxjs/internal/observable/race';
export { timer } from 'rxjs/internal/observable/timer';
export { interval } from 'rxjs/internal/observable/interval';
export { expand } from 'rxjs/internal/operators/expand';
export { switchMap } from 'rxjs/internal/operators/switchMap';
export type { Observable, SchedulerLike, Subscription } from 'rxjs';
