/**
 * A flood of bad tokens against a legitimate client. One client sends `GET /v1/me`
 * with its own token, one request at a time: first alone (quiet), then while an attacker (a
 * process of its own on the same machine, bench/lib/token-flood.ts) sends `flood` requests with
 * random tokens, `attackers` at a time. Two servers on
 * the same database, in the same run: Coord as shipped (the failed-authentication limit, 100 per
 * minute per address) and Coord with the limit off (`COORD_AUTH_FAILURE_LIMIT=0`: every refused
 * token is a database lookup, as before the limit). The goal: the legitimate client's p99 under
 * the flood within 2× of its quiet p99, as shipped. `lookups` is how many of the attacker's
 * tokens the server asked the database about (`coord_auth_refusals_total{reason="database"}`).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { call, openPool } from './lib/http.js';
import { REPO_ROOT, type CoordServer } from './lib/server.js';
import { round, summarize, type Summary } from './lib/stats.js';

export interface AuthFloodRun {
  /** Which server: `limit on` (as shipped) or `limit off`. */
  name: string;
  quiet: Summary;
  flood: Summary;
  /** flood p99 / quiet p99. */
  p99Ratio: number;
  /** Answers the attacker got, by status. */
  attackerStatuses: Record<string, number>;
  /** The attacker's tokens the server looked up in the database. */
  lookups: number;
  /** Legitimate requests made during the flood. */
  legitimateDuringFlood: number;
}

export interface AuthFloodResult {
  flood: number;
  attackers: number;
  runs: AuthFloodRun[];
}

/** `coord_auth_refusals_total{reason="database"}` of the server. */
async function lookups(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const m = /^coord_auth_refusals_total\{reason="database"\} (\d+)/m.exec(text);
  return m ? Number(m[1]) : 0;
}

/** One run against `server`: the legitimate client quiet, then under the flood. */
export async function authFloodRun(
  name: string,
  server: CoordServer,
  opts: { flood: number; attackers: number; quietRequests: number },
): Promise<AuthFloodRun> {
  const legit = openPool(server.base, 1);
  try {
    const token = (await call(legit, 'POST', '/v1/sessions', server.adminToken, { name: `auth-flood-${name}` })).body.token as string;
    const once = async (into: number[]) => {
      const t = performance.now();
      await call(legit, 'GET', '/v1/me', token);
      into.push(performance.now() - t);
    };
    for (let i = 0; i < 100; i++) await once([]); // warm-up
    const quiet: number[] = [];
    for (let i = 0; i < opts.quietRequests; i++) await once(quiet);
    const before = await lookups(server.base);
    let attacking = true;
    let started!: () => void;
    const firstAnswer = new Promise<void>((r) => (started = r));
    const attacker = new Promise<Record<string, number>>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', path.join('bench', 'lib', 'token-flood.ts'), server.base, String(opts.flood), String(opts.attackers)],
        {
          cwd: REPO_ROOT,
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let out = '';
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString('utf8');
        if (out.startsWith('started\n')) started();
      });
      child.once('error', reject);
      child.once('exit', (code) =>
        code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop()!) as Record<string, number>) : reject(new Error(`token flood exited with ${code}`)),
      );
    }).finally(() => {
      attacking = false;
      started();
    });
    // Measured from the attacker's first answer: its start-up (tsx) is not part of the flood.
    await firstAnswer;
    const flood: number[] = [];
    while (attacking) await once(flood);
    const statuses = await attacker;
    const after = await lookups(server.base);
    const q = summarize(quiet);
    const f = summarize(flood);
    return {
      name,
      quiet: q,
      flood: f,
      p99Ratio: round(f.p99 / q.p99, 2),
      attackerStatuses: statuses,
      lookups: after - before,
      legitimateDuringFlood: flood.length,
    };
  } finally {
    await legit.close();
  }
}

export const AUTH_FLOOD_HEAD = ['server', 'quiet p50', 'quiet p99', 'flood p50', 'flood p99', 'p99 flood/quiet', 'attacker answers', 'database lookups'];

export const authFloodTitle = (r: AuthFloodResult) =>
  `Failed authentication: GET /v1/me of a legitimate client (ms) alone and under ${r.flood.toLocaleString('en-US')} random-token requests (${r.attackers} at a time)`;

export function authFloodRows(r: AuthFloodResult): (string | number)[][] {
  return r.runs.map((x) => [
    x.name,
    x.quiet.p50,
    x.quiet.p99,
    x.flood.p50,
    x.flood.p99,
    `${x.p99Ratio}×`,
    Object.entries(x.attackerStatuses)
      .map(([k, v]) => `${v} × ${k}`)
      .join(', '),
    x.lookups,
  ]);
}
