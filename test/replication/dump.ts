/** A logical dump of a SQLite file: every schema entry and every row, in a stable order. */
import Database from 'better-sqlite3';

export function dumpDb(path: string): string {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const schema = db.prepare("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name").all() as {
      type: string;
      name: string;
      sql: string;
    }[];
    const rows = schema
      .filter((s) => s.type === 'table')
      .map((t) => ({
        table: t.name,
        rows: (db.prepare(`SELECT * FROM "${t.name}" ORDER BY rowid`).raw().all() as unknown[][]).map(hexBlobs),
      }));
    return JSON.stringify({ schema, rows });
  } finally {
    db.close();
  }
}

function hexBlobs(row: unknown[]): unknown[] {
  return row.map((v) => (Buffer.isBuffer(v) ? `blob:${v.toString('hex')}` : typeof v === 'bigint' ? `big:${v}` : v));
}
