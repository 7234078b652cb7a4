/**
 * What of an `Idempotency-Key` and its answer reaches the database: neither in the clear. An
 * answer can hold a secret (`POST /v1/sessions` returns the new session's one-time token, which
 * Coord otherwise keeps only as a hash), so a dump of `idempotency_keys` must reveal neither the
 * keys nor the answers. Only the client holds the key; everything here is derived from it:
 *
 * - the row is found by {@link keyHash}: sha256 (hex) of a fixed label, the principal and the key;
 * - the answer's headers and body are sealed with AES-256-GCM under {@link answerKey}: HKDF-SHA256
 *   of the key, with its own salt and the principal as info. The lookup hash is a plain sha256 of
 *   a differently labelled input, so it reveals nothing about the encryption key;
 * - the plain columns of the row (key hash, status, fingerprint, first request) are the sealed
 *   answer's additional authenticated data: a row edited in the database fails to open.
 *
 * The protection is as strong as the key is unguessable: a random UUID (what the SDK sends) is
 * 122 bits; a key like `1` can be found by trying. All functions are synchronous and pure.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/** Domain labels: the lookup hash and the encryption key never share an input. */
const LOOKUP_LABEL = 'coord idempotency-key lookup v1';
const SEAL_SALT = 'coord idempotency-key answer v1';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The row's lookup key: sha256 (64 hex characters) of `LOOKUP_LABEL \0 principal \0 key`.
 * `principal` is `user:<id>` or `session:<id>`; `key` the parsed header (printable ASCII, so no NUL).
 */
export function keyHash(principal: string, key: string): string {
  return createHash('sha256').update(`${LOOKUP_LABEL}\0${principal}\0${key}`).digest('hex');
}

/** The 32-byte AES-256-GCM key for the answers stored under (principal, key): HKDF-SHA256(key, salt, `answer\0principal`). */
export function answerKey(principal: string, key: string): Buffer {
  return Buffer.from(hkdfSync('sha256', key, SEAL_SALT, `answer\0${principal}`, 32));
}

/** The plain columns a sealed answer is bound to (its additional authenticated data). */
export interface SealContext {
  keyHash: string;
  status: number;
  fingerprint: string;
  request: string;
}

function aad(c: SealContext): Buffer {
  return Buffer.from(JSON.stringify([c.keyHash, c.status, c.fingerprint, c.request]));
}

/**
 * Seals headers and body: `iv (12 bytes) ‖ auth tag (16) ‖ ciphertext`, where the plaintext is
 * the headers as JSON, its length first (4 bytes, big-endian), then the body bytes. A fresh random
 * IV per answer.
 */
export function sealAnswer(secret: Buffer, context: SealContext, headers: Record<string, string>, body: Buffer): Buffer {
  const json = Buffer.from(JSON.stringify(headers));
  const len = Buffer.alloc(4);
  len.writeUInt32BE(json.length);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', secret, iv);
  cipher.setAAD(aad(context));
  const ciphertext = Buffer.concat([cipher.update(len), cipher.update(json), cipher.update(body), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ciphertext]);
}

/**
 * Opens what {@link sealAnswer} wrote, or null when it does not open: another key (a hash
 * collision, in theory), an edited row, or a truncated value. Never throws.
 */
export function openAnswer(secret: Buffer, context: SealContext, sealed: Buffer): { headers: Record<string, string>; body: Buffer } | null {
  try {
    if (sealed.length < IV_BYTES + TAG_BYTES + 4) return null;
    const decipher = createDecipheriv('aes-256-gcm', secret, sealed.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
    decipher.setAAD(aad(context));
    decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    const plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    const len = plain.readUInt32BE(0);
    if (4 + len > plain.length) return null;
    const headers = JSON.parse(plain.subarray(4, 4 + len).toString('utf8')) as Record<string, string>;
    return { headers, body: plain.subarray(4 + len) };
  } catch {
    return null;
  }
}
