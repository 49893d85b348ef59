/**
 * A preload for bench/restart (`node --import <this file>`, set through NODE_OPTIONS so that it
 * reaches the process tsx's CLI starts too): appends to the file named by KW_RESTART_MARKS one JSON
 * line per point of a node's start, each `{ pid, mark, at }` with `at` in epoch ms
 * (performance.timeOrigin + performance.now(): comparable across processes).
 *
 *   exec      the process was created (performance.timeOrigin)
 *   preload   this file runs: Node's own boot is over, the app's modules load next
 *   listen    the first server socket listens (the HTTP port)
 *   worker    the first worker thread is created; online: it runs (the last of the first n)
 *   served    the first HTTP response with status 200 is finished
 *
 * Plain JavaScript with no imports of the project: it must load before tsx's hooks and must not
 * change what the node loads. Nothing in src/ knows of it.
 */
import { appendFileSync } from 'node:fs';
import { channel } from 'node:diagnostics_channel';
import net from 'node:net';

const file = process.env.KW_RESTART_MARKS;
if (file) {
  const seen = new Set();
  const mark = (name, at = performance.timeOrigin + performance.now()) => {
    if (seen.has(name)) return;
    seen.add(name);
    appendFileSync(file, JSON.stringify({ pid: process.pid, mark: name, at }) + '\n');
  };
  mark('exec', performance.timeOrigin);
  mark('preload');
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function (...args) {
    this.once('listening', () => mark('listen'));
    return listen.apply(this, args);
  };
  let online = 0;
  process.on('worker', (w) => {
    mark('worker');
    w.once('online', () => mark(`online${++online}`));
  });
  // Held in a global: Node 20 keeps a channel only as long as something references it.
  globalThis.kwRestartFinish = channel('http.server.response.finish');
  globalThis.kwRestartFinish.subscribe(({ response }) => {
    if (response.statusCode === 200) mark('served');
  });
}
