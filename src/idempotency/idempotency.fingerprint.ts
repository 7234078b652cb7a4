/**
 * What identifies "the same request" for an `Idempotency-Key` (IETF
 * draft-ietf-httpapi-idempotency-key-header §2.2 "Idempotency Fingerprint"): the method, the
 * path with its query parameters sorted, and the JSON body in a canonical form (object keys
 * sorted, no insignificant whitespace), hashed with sha256. Two bodies that differ only in key
 * order or spacing are the same request; anything else is a different one.
 */
import { createHash } from 'node:crypto';

/** The header's shape: 1–255 printable ASCII characters (U+0021–U+007E, and inner spaces). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;
export const IDEMPOTENCY_KEY_MAX = 255;

/**
 * The key in an `Idempotency-Key` header value, or null when it is not one Coord accepts. The
 * draft defines the value as a Structured Field String (RFC 8941: `"8e03978e-…"`, quotes included);
 * most clients send the bare value. Both are taken, and mean the same key: a quoted value is
 * unquoted (`\"` and `\\` unescaped) first. The key is then 1–255 printable ASCII characters
 * (see {@link IDEMPOTENCY_KEY_PATTERN}).
 */
export function parseIdempotencyKey(header: string): string | null {
  let key = header.trim();
  if (key.length >= 2 && key.startsWith('"') && key.endsWith('"')) {
    let inner = '';
    for (let i = 1; i < key.length - 1; i++) {
      let c = key[i];
      if (c === '"') return null;
      if (c === '\\') {
        c = key[++i];
        if (i >= key.length - 1 || (c !== '"' && c !== '\\')) return null;
      }
      inner += c;
    }
    key = inner;
  }
  return key.length <= IDEMPOTENCY_KEY_MAX && IDEMPOTENCY_KEY_PATTERN.test(key) ? key : null;
}

/** `/v1/todos?b=2&a=1` → `/v1/todos?a=1&b=2` (pairs sorted by name, then value). */
export function canonicalPath(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = [...new URLSearchParams(url.slice(q + 1))].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  return params.length ? `${url.slice(0, q)}?${new URLSearchParams(params).toString()}` : url.slice(0, q);
}

/**
 * Canonical JSON of a parsed body: keys sorted by UTF-16 code units, `JSON.stringify` for
 * scalars, `undefined` (no body) as the empty string. Iterative, so a body nested thousands of
 * levels deep (graph routes check their own bodies) cannot overflow the stack here.
 */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return '';
  const out: string[] = [];
  // Work items: a value to write, or a literal piece of punctuation.
  const stack: ({ v: unknown } | { s: string })[] = [{ v: value }];
  while (stack.length) {
    const item = stack.pop()!;
    if ('s' in item) {
      out.push(item.s);
      continue;
    }
    const v = item.v;
    if (v === null || typeof v !== 'object') {
      out.push(v === undefined ? 'null' : JSON.stringify(v));
    } else if (Array.isArray(v)) {
      const parts: ({ v: unknown } | { s: string })[] = [{ s: '[' }];
      v.forEach((x, i) => parts.push(...(i ? [{ s: ',' }] : []), { v: x }));
      parts.push({ s: ']' });
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else {
      const keys = Object.keys(v)
        .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
        .sort();
      const parts: ({ v: unknown } | { s: string })[] = [{ s: '{' }];
      keys.forEach((k, i) => parts.push({ s: `${i ? ',' : ''}${JSON.stringify(k)}:` }, { v: (v as Record<string, unknown>)[k] }));
      parts.push({ s: '}' });
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    }
  }
  return out.join('');
}

/** sha256 (hex) of `METHOD`, the canonical path and the canonical body, newline-separated. */
export function requestFingerprint(method: string, url: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method}\n${canonicalPath(url)}\n${canonicalJson(body)}`)
    .digest('hex');
}
