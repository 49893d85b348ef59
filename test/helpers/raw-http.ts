/**
 * HTTP as a hostile client speaks it: one request per connection with any method, headers and
 * body (written in chunks, each after the socket drained), raw bytes on a socket, and a snapshot
 * of a folder to show a request changed nothing.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';

export interface Answer {
  status: number;
  /** The body parsed as JSON when it is JSON, else `{ text }`. */
  body: { error?: string; message?: string; alarm?: unknown; result?: unknown; text?: string };
  headers: Record<string, string | string[] | undefined>;
}

/** Every file under `root` (relative path → SHA-256 of its bytes). */
export function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(root)) return out;
  for (const rel of readdirSync(root, { recursive: true }).map(String).sort()) {
    const path = join(root, rel);
    if (statSync(path).isFile()) out[rel] = createHash('sha256').update(readFileSync(path)).digest('hex');
  }
  return out;
}

function parsed(text: string): Answer['body'] {
  if (!text) return {};
  try {
    return JSON.parse(text) as Answer['body'];
  } catch {
    return { text };
  }
}

/** One request on its own connection. */
export function send(url: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((ok, fail) => {
    const req = request({ host: hostname, port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, body: parsed(Buffer.concat(chunks).toString()), headers: res.headers }));
    });
    req.on('error', fail);
    const write = async () => {
      for (let at = 0; body && at < body.length; at += 65_536)
        if (!req.write(body.subarray(at, at + 65_536))) await new Promise((r) => req.once('drain', r));
      req.end();
    };
    write().catch(fail);
  });
}

/**
 * Writes `bytes` on a new connection (`{host}` and `{port}` in them replaced) and resolves with
 * everything the node sends before it closes the connection; `end`: half-close after writing.
 */
export function raw(url: string, bytes: string, { end = false } = {}): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((ok, fail) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(bytes.replaceAll('{host}', hostname).replaceAll('{port}', port));
      if (end) socket.end();
    });
    let text = '';
    socket.setEncoding('utf8').on('data', (c: string) => (text += c));
    socket.on('close', () => ok(text)).on('error', fail);
  });
}

/** The status and JSON body of the first response in `text` (as `raw` returns it). */
export function rawAnswer(text: string): Answer {
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0);
  const at = text.indexOf('\r\n\r\n');
  return { status, body: at < 0 ? {} : parsed(text.slice(at + 4)), headers: {} };
}
