/**
 * A short-lived cache of token → principal, so a request costs one database round trip (its own
 * statement) instead of two. Revocation stays immediate: stopping or deleting a session rings
 * `session-stopped:<id>`, and revoking or rotating a token rings `token-revoked:<id>`, on the
 * event doorbell after its commit; every replica evicts the entries here (the acting replica
 * synchronously, before its response; the others on the NOTIFY, within milliseconds). `ttlMs`
 * bounds the staleness if a notification is lost (e.g. while the LISTEN connection reconnects),
 * and an entry never outlives its token's expiry as the database measured it at lookup. Misses
 * (unknown tokens) are never cached.
 */
import type { Principal } from './principal.js';

export class PrincipalCache {
  private byHash = new Map<string, { principal: Principal; at: number; ttl: number }>();
  private hashesOfSession = new Map<string, Set<string>>();
  private hashOfToken = new Map<string, string>();

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
    if (this.ttlMs <= 0) return;
    const ttl = Math.min(this.ttlMs, expiresInMs ?? Infinity);
    if (ttl <= 0) return;
    if (this.byHash.size >= this.max) {
      const [oldest, entry] = this.byHash.entries().next().value!;
      this.delete(oldest, entry.principal);
    }
    this.byHash.set(hash, { principal, at: since, ttl });
    if (principal.token) this.hashOfToken.set(principal.token.id, hash);
    if (principal.kind === 'session') {
      let set = this.hashesOfSession.get(principal.id);
      if (!set) this.hashesOfSession.set(principal.id, (set = new Set()));
      set.add(hash);
    }
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
