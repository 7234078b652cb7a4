/**
 * A short-lived cache of token → principal, so a request costs one database round trip (its own
 * statement) instead of two. Revocation stays immediate: stopping or deleting a session rings
 * `session-stopped:<id>`, and revoking or rotating a token rings `token-revoked:<id>`, on the
 * event doorbell after its commit; every replica evicts the entries here (the acting replica
 * synchronously, before its response; the others on the NOTIFY, within milliseconds). `ttlMs`
 * bounds the staleness if a notification is lost (e.g. while the LISTEN connection reconnects),
 * and an entry never outlives its token's expiry as the database measured it at lookup.
 *
 * Refusals are cached too: a token the database refused is refused again for
 * `ttlMs` without asking it, so a client retrying with a revoked or mistyped token costs no
 * statement. Refusal is final for every token Coord issues (a revoked, expired or stopped
 * session's token never comes back, and a new token is random, so nobody sent it before), with one
 * exception: a `COORD_ADMIN_TOKEN` value tried before another replica installed it is accepted
 * here up to `ttlMs` later.
 */
import type { Principal } from './principal.js';

export class PrincipalCache {
  private byHash = new Map<string, { principal: Principal; at: number; ttl: number }>();
  private hashesOfSession = new Map<string, Set<string>>();
  private hashOfToken = new Map<string, string>();
  /** Token hashes the database refused, with `performance.now()` of when it was asked. */
  private refusedAt = new Map<string, number>();
  /** Token hashes the database accepted, with `performance.now()` of the last time (kept past `ttlMs`). */
  private acceptedAt = new Map<string, number>();

  constructor(
    /** How long an entry is trusted without a database check, in ms (0 disables the cache). */
    private readonly ttlMs = 5000,
    /** Entries kept at most; the oldest go first. */
    private readonly max = 10_000,
  ) {}

  get(hash: string): Principal | undefined {
    if (this.ttlMs <= 0) return undefined;
    const hit = this.byHash.get(hash);
    if (!hit) return undefined;
    if (performance.now() - hit.at >= hit.ttl) {
      this.delete(hash, hit.principal);
      return undefined;
    }
    return hit.principal;
  }

  /**
   * Caches a principal; `expiresInMs` is how long its token has left by the database clock, counted
   * from `since` (`performance.now()` when the database was asked; default now).
   */
  set(hash: string, principal: Principal, expiresInMs?: number, since = performance.now()): void {
    this.acceptedAt.delete(hash);
    if (this.acceptedAt.size >= this.max) this.acceptedAt.delete(this.acceptedAt.keys().next().value!);
    this.acceptedAt.set(hash, since);
    if (this.ttlMs <= 0) return;
    const ttl = Math.min(this.ttlMs, expiresInMs ?? Infinity);
    if (ttl <= 0) return;
    if (this.byHash.size >= this.max) {
      const [oldest, entry] = this.byHash.entries().next().value!;
      this.delete(oldest, entry.principal);
    }
    this.byHash.set(hash, { principal, at: since, ttl });
    this.refusedAt.delete(hash);

    if (principal.token) this.hashOfToken.set(principal.token.id, hash);
    if (principal.kind === 'session') {
      let set = this.hashesOfSession.get(principal.id);
      if (!set) this.hashesOfSession.set(principal.id, (set = new Set()));
      set.add(hash);
    }
  }

  /** Whether the database refused `hash` less than `ttlMs` ago. */
  isRefused(hash: string): boolean {
    if (this.ttlMs <= 0) return false;
    const at = this.refusedAt.get(hash);
    if (at === undefined) return false;
    if (performance.now() - at < this.ttlMs) return true;
    this.refusedAt.delete(hash);
    return false;
  }

  /**
   * Whether the database accepted `hash` within the last `withinMs` and has not refused it since:
   * a token this replica knows, whose cache entry may have expired. The failed-authentication
   * limit lets such a token be looked up again even from an address over the limit (a client
   * behind the same NAT as an attacker keeps working).
   */
  acceptedWithin(hash: string, withinMs: number): boolean {
    const at = this.acceptedAt.get(hash);
    return at !== undefined && performance.now() - at < withinMs;
  }

  /** Notes that the database, asked at `since` (`performance.now()`), refused `hash`. */
  refuse(hash: string, since = performance.now()): void {
    this.acceptedAt.delete(hash);
    if (this.ttlMs <= 0) return;
    this.refusedAt.delete(hash);
    if (this.refusedAt.size >= this.max) this.refusedAt.delete(this.refusedAt.keys().next().value!);
    this.refusedAt.set(hash, since);
  }

  /** Forgets a stopped or deleted session. */
  evictSession(sessionId: string): void {
    for (const hash of this.hashesOfSession.get(sessionId) ?? []) {
      const hit = this.byHash.get(hash);
      if (hit) this.delete(hash, hit.principal);
    }
    this.hashesOfSession.delete(sessionId);
  }

  /** Forgets a revoked or rotated token. */
  evictToken(tokenId: string): void {
    const hash = this.hashOfToken.get(tokenId);
    const hit = hash === undefined ? undefined : this.byHash.get(hash);
    if (hash !== undefined && hit) this.delete(hash, hit.principal);
    this.hashOfToken.delete(tokenId);
  }

  private delete(hash: string, principal: Principal): void {
    this.byHash.delete(hash);
    if (principal.token && this.hashOfToken.get(principal.token.id) === hash) this.hashOfToken.delete(principal.token.id);
    if (principal.kind === 'session') this.hashesOfSession.get(principal.id)?.delete(hash);
  }
}
