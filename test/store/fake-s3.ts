/**
 * A scripted S3 server on 127.0.0.1 for S3Store's tests: every request is recorded (`seen`) and
 * answered by `reply` — a status, headers and body, 'drop' (the connection closed without an
 * answer) or 'stall' (no answer until the server stops) — or from a script of PUT replies (`script`). Plus a clock that records the retry
 * delays asked of it and returns at once.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../src/core/clock.js';

export interface Seen {
  method: string;
  key: string;
  /** The request target as sent (path and query, still encoded). */
  url: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** 'drop' closes the connection without an answer (a network error); 'stall' never answers. */
export type Reply = { status: number; body?: string | Uint8Array; headers?: Record<string, string> } | 'drop' | 'stall';

export const BUCKET = 'fake-bucket';
export const xmlError = (status: number, code: string): Reply => ({
  status,
  headers: { 'content-type': 'application/xml' },
  body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message></Message></Error>`,
});
export const ok = (etag: string, body: string | Uint8Array = ''): Reply => ({ status: 200, headers: { etag: `"${etag}"` }, body });

export class FakeS3 {
  readonly seen: Seen[] = [];
  private server?: Server;
  reply: (req: Seen) => Reply = () => xmlError(500, 'NotScripted');

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'http://x');
        const path = decodeURIComponent(url.pathname);
        const key = path.startsWith(`/${BUCKET}/`) ? path.slice(BUCKET.length + 2) : '';
        const seen: Seen = {
          method: req.method ?? '',
          key,
          url: req.url ?? '',
          query: url.searchParams,
          headers: req.headers,
          body: Buffer.concat(chunks),
        };
        this.seen.push(seen);
        const reply = this.reply(seen);
        if (reply === 'drop') return void req.socket.destroy();
        if (reply === 'stall') return;
        res.writeHead(reply.status, reply.headers ?? {});
        res.end(reply.body ?? '');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Replies to PUTs from a script, one entry per request; GETs from `object`. */
  script(puts: Reply[], object: () => Reply = () => xmlError(404, 'NoSuchKey')): void {
    let i = 0;
    this.seen.length = 0;
    this.reply = (req) => {
      if (req.method === 'PUT') return puts[i++] ?? xmlError(500, 'ScriptExhausted');
      if (req.method === 'GET') return object();
      return xmlError(500, 'NotScripted');
    };
  }

  methods(): string[] {
    return this.seen.map((s) => s.method);
  }
}

/** A clock that records the delays asked of it and returns at once. */
export class RecordingClock implements Clock {
  readonly sleeps: number[] = [];
  now(): number {
    return 0;
  }
  async sleep(ms: number): Promise<void> {
    this.sleeps.push(ms);
  }
  setTimer(_ms: number, fn: () => void) {
    queueMicrotask(fn);
    return { cancel: () => {} };
  }
}
