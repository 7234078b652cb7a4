import { z } from 'zod';
import { ERROR_CATALOGUE, type ErrorCode } from './errors.js';

/** RFC 9457 problem details, plus Coord's stable `code` and field-level `errors[]`. */
export const Problem = z
  .looseObject({
    type: z.string().describe('A URI naming the problem type: `https://coord.dev/problems/<code>`'),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    instance: z.string().optional(),
    code: z.string().describe('Stable machine code from the error catalogue (docs/errors.md)'),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .meta({ id: 'Problem' });

export type ProblemBody = z.infer<typeof Problem>;

export const PROBLEM_TYPE_BASE = 'https://coord.dev/problems/';

/** Builds a problem document for a catalogue code (or a seed's own code with an explicit status). */
export function problemBody(code: string, detail: string | undefined, status?: number, extra: Record<string, unknown> = {}): ProblemBody {
  const entry = (ERROR_CATALOGUE as Record<string, { status: number; title: string }>)[code];
  // Extras first, so a member such as `status` can never overwrite the problem's own fields.
  return {
    ...extra,
    type: PROBLEM_TYPE_BASE + code,
    title: entry?.title ?? code,
    status: status ?? entry?.status ?? 500,
    ...(detail ? { detail } : {}),
    code,
  };
}

/**
 * The `response` entries a route declares for its error codes, so the OpenAPI document lists
 * every problem a route can return (with the ones every authenticated route can: `unauthorized`,
 * `validation_failed`, `rate_limited`, `busy`, `database_unavailable`). The codes go into the
 * description, which the catalogue test reads.
 */
export function problemResponses(...codes: ErrorCode[]): Record<number, z.ZodType> {
  const byStatus = new Map<number, string[]>();
  for (const c of ['unauthorized', 'validation_failed', 'rate_limited', 'busy', 'database_unavailable', ...codes] as ErrorCode[]) {
    const s = ERROR_CATALOGUE[c].status;
    byStatus.set(s, [...new Set([...(byStatus.get(s) ?? []), c])]);
  }
  const out: Record<number, z.ZodType> = {};
  for (const [status, cs] of byStatus) {
    out[status] = Problem.describe(`Problem codes: ${cs.sort().join(', ')}`);
  }
  return out;
}
