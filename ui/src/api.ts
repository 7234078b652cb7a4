/**
 * The dashboard's one door to Coord: the public SDK (`sdk/src`) over the page's own origin, with
 * the token the user typed in. The token lives in sessionStorage (this tab only, gone when it
 * closes) and is sent only as the `Authorization` header, never in a URL.
 */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { createClient, type CoordClient, type Me } from '../../sdk/src/index.js';

const KEY = 'coord.token';

export function storedToken(): string | null {
  return sessionStorage.getItem(KEY);
}
export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, token);
}

/**
 * A client for `token` against this page's origin (retries as the SDK's defaults). Every response,
 * the event streams' too, passes `onUnauthorized` a 401: the token was revoked, expired, or its
 * session stopped, and no view can recover from that.
 */
export function clientFor(token: string, onUnauthorized: () => void = () => {}): CoordClient {
  const watched: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (res.status === 401) onUnauthorized();
    return res;
  };
  return createClient({ baseUrl: location.origin, token, fetch: watched });
}

/** Who is signed in, and the client to act as them. */
export interface SignedIn {
  client: CoordClient;
  me: Me;
  signOut(): void;
}

export const Session = createContext<SignedIn | null>(null);

/** The signed-in context (views render only inside it). */
export function useSignedIn(): SignedIn {
  const s = useContext(Session);
  if (!s) throw new Error('useSignedIn outside the signed-in app');
  return s;
}

/** A readable line for any error the SDK throws (problem detail first). */
export function errorText(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { detail?: string; message?: string; code?: string };
    return e.detail ?? e.message ?? String(err);
  }
  return String(err);
}
