/**
 * Small, total helpers shared by the contract modules: byte-order comparison,
 * bounded display of untrusted values, and own-property access. None of them
 * throws for any JSON value.
 */

const CONTROL_CHARACTERS = /[\u0000-\u001F\u007F]/g;

/** Limits shared by several modules (docs/seeds/task-graph-v1.md §2, §3, §6). */
export const MAX_MESSAGE_CHARS = 2 * 1024;
export const MAX_ECHO_CHARS = 128;
export const MAX_REASON_BYTES = 8 * 1024;
export const MAX_DECISION_REASON_CHARS = 2 * 1024;

import { compareByteOrder, sortByteOrder } from '../../lib/byte-order.js';

export { compareByteOrder, sortByteOrder };

/** Drop a trailing lone high surrogate left behind by a UTF-16 slice. */
function trimBrokenSurrogate(text: string): string {
  if (text.length === 0) return text;
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, -1) : text;
}

/** Replace control characters with spaces and cap at `limit` UTF-16 characters. */
export function boundText(text: string, limit: number): string {
  return trimBrokenSurrogate(text.replace(CONTROL_CHARACTERS, ' ').slice(0, limit));
}

/** A contract message: control characters replaced, at most 2 KiB of characters. */
export function boundMessage(message: string): string {
  return boundText(message, MAX_MESSAGE_CHARS);
}

/**
 * `String(value)` for display that never throws (objects with a non-callable
 * `toString`, deeply nested arrays, symbols), bounded to `limit` characters
 * with control characters replaced. `undefined` and `null` display as the
 * empty string, as template interpolation of `value ?? ''` does.
 */
export function displayValue(value: unknown, limit: number = MAX_ECHO_CHARS): string {
  let text: string;
  if (value === undefined || value === null) text = '';
  else if (typeof value === 'string') text = value;
  else if (typeof value === 'symbol') text = value.toString();
  else if (typeof value !== 'object' || value === null) text = String(value);
  else if (Array.isArray(value) && value.length > limit) text = '[array]';
  else {
    try {
      text = String(value);
    } catch {
      text = Array.isArray(value) ? '[array]' : '[object]';
    }
  }
  return boundText(text, limit);
}

/** UTF-8 byte length. */
export function utf8ByteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Truncate to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (utf8ByteLength(text) <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8').subarray(0, maxBytes);
  return bytes.toString('utf8').replace(/\uFFFD+$/u, '');
}

/**
 * A stored reason for frontier output: control characters replaced, trimmed,
 * bounded to 8 KiB of UTF-8; empty or absent → null (docs/seeds/task-graph-v1.md §3).
 */
export function boundReason(reason: string | null | undefined): string | null {
  if (typeof reason !== 'string') return null;
  const text = reason.replace(CONTROL_CHARACTERS, ' ').trim();
  if (text === '') return null;
  return truncateUtf8(text, MAX_REASON_BYTES);
}

/**
 * A JSON object: not null, not an array, and with the plain-object (or null)
 * prototype that `JSON.parse` produces. Class instances are refused.
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Read an own property only. A key inherited through the prototype chain (for
 * example after prototype pollution elsewhere in the process) reads as absent.
 */
export function ownValue(record: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The alphabetically first (byte-order) own key not in `allowed`, or null. */
export function firstUnknownKey(record: Record<string, unknown>, allowed: ReadonlySet<string>): string | null {
  let first: string | null = null;
  for (const key of Object.keys(record)) {
    if (allowed.has(key)) continue;
    if (first === null || compareByteOrder(key, first) < 0) first = key;
  }
  return first;
}

/** Recursively freeze plain data (arrays and plain objects). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value as Record<string, unknown>)) deepFreeze(item);
  }
  return value;
}
