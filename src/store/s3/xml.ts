/**
 * The few S3 XML documents the lean client reads and writes (pure), by a minimal extractor rather
 * than a general parser: S3's answers are flat, element names are fixed, and a 1,000-key listing
 * is read in a fraction of the time a parser takes to build its tree (bench/s3-overhead.ts).
 *
 *   <ListBucketResult> … <IsTruncated>true</IsTruncated><NextContinuationToken>t</NextContinuationToken>
 *                        <Contents><Key>a&amp;b</Key>…</Contents> …          → listPage
 *   <DeleteResult><Error><Key>k</Key><Code>SlowDown</Code>…</Error>…           → deleteErrors
 *   <Error><Code>NoSuchKey</Code><Message>…</Message>…</Error>                  → errorCode
 *
 * Text is unescaped (the five named entities and numeric references); CDATA and comments are
 * not expected in S3's answers, and an element the document lacks reads as absent.
 */

const ENTITY = /&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g;
const NAMED: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

export function unescapeXml(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY, (_, e: string) => {
    if (e[0] !== '#') return NAMED[e]!;
    return String.fromCodePoint(e[1] === 'x' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
  });
}

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&${{ '&': 'amp', '<': 'lt', '>': 'gt', '"': 'quot', "'": 'apos' }[c]};`);
}

/** The unescaped text of every `<name>…</name>` between `from` and `to`, in order. */
function texts(xml: string, name: string, from = 0, to = xml.length): string[] {
  const open = `<${name}>`;
  const close = `</${name}>`;
  const out: string[] = [];
  for (let i = xml.indexOf(open, from); i >= 0 && i < to; i = xml.indexOf(open, i)) {
    const start = i + open.length;
    const end = xml.indexOf(close, start);
    if (end < 0 || end > to) throw new SyntaxError(`S3 answer has <${name}> without </${name}>`);
    out.push(unescapeXml(xml.slice(start, end)));
    i = end + close.length;
  }
  return out;
}

/** The first `<name>…</name>`'s text, or undefined. */
function first(xml: string, name: string): string | undefined {
  const open = `<${name}>`;
  const i = xml.indexOf(open);
  if (i < 0) return undefined;
  const end = xml.indexOf(`</${name}>`, i);
  if (end < 0) throw new SyntaxError(`S3 answer has <${name}> without </${name}>`);
  return unescapeXml(xml.slice(i + open.length, end));
}

/** The spans of every `<name>…</name>` element, each as [start, end) of its content. */
function elements(xml: string, name: string): [number, number][] {
  const open = `<${name}>`;
  const close = `</${name}>`;
  const out: [number, number][] = [];
  for (let i = xml.indexOf(open); i >= 0;) {
    const end = xml.indexOf(close, i);
    if (end < 0) throw new SyntaxError(`S3 answer has <${name}> without </${name}>`);
    out.push([i + open.length, end]);
    i = xml.indexOf(open, end);
  }
  return out;
}

export interface XmlListPage {
  /** Full keys, in the order S3 sent them. */
  keys: string[];
  /** Set only when the listing is truncated. */
  continuation?: string;
}

/** A ListObjectsV2 answer (`<ListBucketResult>`); throws SyntaxError when it is not one. */
export function listPage(xml: string): XmlListPage {
  if (!xml.includes('<ListBucketResult')) throw new SyntaxError('S3 answered a listing without <ListBucketResult>');
  // A <Key> only ever appears inside <Contents> (no <Owner> or <CommonPrefixes> without a delimiter,
  // and neither holds a <Key>).
  const keys = texts(xml, 'Key');
  const truncated = first(xml, 'IsTruncated') === 'true';
  const token = first(xml, 'NextContinuationToken');
  return truncated && token ? { keys, continuation: token } : { keys };
}

/** The per-key errors of a DeleteObjects answer (`<DeleteResult>`), with '' for a missing code. */
export function deleteErrors(xml: string): { key: string; code: string }[] {
  if (!xml.includes('<DeleteResult')) throw new SyntaxError('S3 answered DeleteObjects without <DeleteResult>');
  return elements(xml, 'Error').map(([start, end]) => ({
    key: texts(xml, 'Key', start, end)[0] ?? '',
    code: texts(xml, 'Code', start, end)[0] ?? '',
  }));
}

/** An error answer's `<Code>`, or undefined when the body is not one (HEAD answers have none). */
export function errorCode(xml: string): string | undefined {
  if (!xml.includes('<Error')) return undefined;
  return first(xml, 'Code') || undefined;
}

/** A DeleteObjects request body (Quiet: only failures are reported). */
export function deleteRequest(keys: readonly string[]): string {
  let xml = '<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet>';
  for (const key of keys) xml += `<Object><Key>${escapeXml(key)}</Key></Object>`;
  return xml + '</Delete>';
}
