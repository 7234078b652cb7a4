/**
 * Free text Coord stores (Postgres text and jsonb hold valid Unicode without U+0000): the one check
 * and the one schema for it, so a body with an unpaired surrogate or NUL is a 400 at the schema,
 * never a 500 at the database.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { DomainError } from './errors.js';

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `text` cannot be stored (a NUL, an unpaired surrogate), or null when it can. */
export function unstorable(text: string | undefined): string | null {
  if (text === undefined) return null;
  if (text.includes('\u0000')) return 'a NUL character (U+0000)';
  if (LONE_SURROGATE.test(text)) return 'an unpaired UTF-16 surrogate';
  return null;
}

/** A string of at most `max` characters that Coord can store. */
export const StoredText = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => unstorable(v) === null, 'must be valid Unicode text without NUL (U+0000) or unpaired surrogates');

/** How deep a JSON body may nest (arrays and objects): deeper bodies are refused with 400. */
export const MAX_JSON_DEPTH = 100;

/**
 * The first place in a parsed JSON body (a string value or an object key) that Coord cannot store,
 * as `{ path, problem }` with a dotted path (`body.members.0.result`), or null. Nesting deeper
 * than {@link MAX_JSON_DEPTH} is refused too: a stored value is serialised recursively
 * (`JSON.stringify`, jsonb), which a few thousand levels overflow. Iterative, so a deeply nested body cannot overflow the stack here.
 */
export function findUnstorable(body: unknown): { path: string; problem: string } | null {
  const stack: [unknown, string, number][] = [[body, 'body', 0]];
  while (stack.length) {
    const [v, at, depth] = stack.pop() as [unknown, string, number];
    if (typeof v === 'string') {
      const problem = unstorable(v);
      if (problem) return { path: at, problem };
    } else if (v !== null && typeof v === 'object') {
      if (depth >= MAX_JSON_DEPTH) return { path: at, problem: `nesting deeper than ${MAX_JSON_DEPTH} levels` };
      if (Array.isArray(v)) {
        for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${at}.${i}`, depth + 1]);
      } else {
        for (const [k, x] of Object.entries(v)) {
          const problem = unstorable(k);
          if (problem) return { path: at, problem: `${problem} in a key` };
          stack.push([x, `${at}.${k}`, depth + 1]);
        }
      }
    }
  }
  return null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route's own validation refuses text Coord cannot store, in its seed's error shape
     * (Task Graph v1 validate and create: 400 `TASK_GRAPH_INVALID` naming the stage), so the
     * refusal of {@link refuseUnstorableText} leaves its body to it.
     */
    checksOwnText?: boolean;
  }
}

/**
 * Refuses what Coord cannot store before any route runs: text Postgres cannot hold (an unpaired
 * surrogate, NUL) wherever it sits in a JSON body, values and keys alike, and
 * nesting deeper than {@link MAX_JSON_DEPTH}: 400 `validation_failed` naming the path, nothing
 * written. A route whose contract checks its body itself sets `checksOwnText` (Task Graph v1
 * validate and create: the contract's strict shapes refuse deep nesting too, as TASK_GRAPH_INVALID).
 */
export function refuseUnstorableText(app: FastifyInstance): void {
  app.addHook('preValidation', async (req) => {
    if (req.body === undefined || req.body === null || req.routeOptions.config?.checksOwnText) return;
    const bad = findUnstorable(req.body);
    if (bad) {
      const message = bad.problem.startsWith('nesting')
        ? `must not nest deeper than ${MAX_JSON_DEPTH} levels`
        : `must be valid Unicode text: found ${bad.problem}`;
      throw new DomainError('validation_failed', `${bad.path}: ${message}`, { errors: [{ path: bad.path, message }] });
    }
  });
}
