import { createHash, randomBytes } from 'node:crypto';

/**
 * Public ids carry a type prefix (docs/architecture.md §D9): `td-` todo items, `s-` sessions, `u-` users,
 * `sc-` scenarios, `tk-` tokens, `tm-` teams. The body is 16 lowercase hex characters (64 random bits), so ids sort the same
 * under every collation.
 */
export type IdPrefix = 'td' | 's' | 'u' | 'sc' | 'tk' | 'tm';

export function newId(prefix: IdPrefix): string {
  return `${prefix}-${randomBytes(8).toString('hex')}`;
}

/** A bearer token: `coord_` + 43 base64url characters (256 random bits). Shown once, stored hashed. */
export function newToken(): string {
  return `coord_${randomBytes(32).toString('base64url')}`;
}

/** sha256(token) as hex. Tokens carry 256 random bits, so a fast hash is the right tool. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
