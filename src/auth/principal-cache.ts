/**
 * A short-lived cache of token → principal, so a request costs one database round trip (its own
 * statement) instead of two. Revocation stays immediate: stopping or deleting a session rings
 * `session-stopped:<id>` on the event doorbell after its commit, and every replica evicts that
 * session here (the stopping replica synchronously, before the stop's response; the others on
 * the NOTIFY, within milliseconds). `ttlMs` bounds the staleness if a notification is lost
 * (e.g. while the LISTEN connection reconnects). Misses (unknown tokens) are never cached.
 */
import type { Principal } from './principal.js';

export class PrincipalCache {
  private byHash = new Map<string, { principal: Principal; at: number }>();
  private hashesOfSession = new Map<string, Set<string>>();

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
    if (performance.now() - hit.at > this.ttlMs) {
      this.delete(hash, hit.principal);
      return undefined;
    }
    return hit.principal;
  }

  set(hash: string, principal: Principal): void {
    if (this.ttlMs <= 0) return;
    if (this.byHash.size >= this.max) {
      const [oldest, entry] = this.byHash.entries().next().value!;
      this.delete(oldest, entry.principal);
    }
    this.byHash.set(hash, { principal, at: performance.now() });
    if (principal.kind === 'session') {
      let set = this.hashesOfSession.get(principal.id);
      if (!set) this.hashesOfSession.set(principal.id, (set = new Set()));
      set.add(hash);
    }
  }

  /** Forgets a stopped or deleted session. */
  evictSession(sessionId: string): void {
    for (const hash of this.hashesOfSession.get(sessionId) ?? []) this.byHash.delete(hash);
    this.hashesOfSession.delete(sessionId);
  }

  private delete(hash: string, principal: Principal): void {
    this.byHash.delete(hash);
    if (principal.kind === 'session') this.hashesOfSession.get(principal.id)?.delete(hash);
  }
}
