/**
 * The RxJS operators keepwork uses, imported one module each: `import … from 'rxjs'` loads every
 * one of its ~220 CommonJS modules at start (~0.1 s of a node's start, more than the rest of RxJS's
 * share of the work), these few load ~30. The deep paths are RxJS 7's `./internal/*` exports; every
 * other module imports them from here, so an RxJS upgrade changes one file.
 */
export { defer } from 'rxjs/internal/observable/defer';
export { from } from 'rxjs/internal/observable/from';
export { race } from 'rxjs/internal/observable/race';
export { timer } from 'rxjs/internal/observable/timer';
export { interval } from 'rxjs/internal/observable/interval';
export { expand } from 'rxjs/internal/operators/expand';
export { switchMap } from 'rxjs/internal/operators/switchMap';
export type { Observable, SchedulerLike, Subscription } from 'rxjs';
