/**
 * Where the time goes (`npm run bench -- --profile`): a V8 CPU profile of the Coord server during
 * the claim benchmark, summarised by package and by function, and Postgres's own view of the same
 * run from `pg_stat_statements` (calls, mean and total execution time per statement).
 */
import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type postgres from 'postgres';
import { round } from './lib/stats.js';

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  /** Profiled wall time, ms. */
  wallMs: number;
  /** Share of samples in which the server was idle (waiting on I/O), %. */
  idlePercent: number;
  /** Self time by package / area, % of all samples. */
  byArea: { area: string; percent: number }[];
  /** Hottest functions by self time, % of all samples. */
  topFunctions: { fn: string; where: string; percent: number }[];
}

/** Which package or area a script URL belongs to. */
function areaOf(url: string, fn: string): string {
  if (!url) return fn.startsWith('(') ? fn : '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (nm) return nm[1];
  if (url.startsWith('node:')) return 'node internals';
  const src = /\/(src\/[^/]+)\//.exec(url);
  if (src) return `coord ${src[1]}`;
  return path.basename(url);
}

/** Copies the (single) `.cpuprofile` in `dir` to `to`, for Chrome DevTools or speedscope. */
export function keepCpuProfile(dir: string, to: string): void {
  copyFileSync(path.join(dir, profileFile(dir)), to);
}

function profileFile(dir: string): string {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no .cpuprofile written to ${dir}`);
  return file;
}

/** Reads the (single) `.cpuprofile` in `dir` and summarises it. */
export function summarizeCpuProfile(dir: string): ProfileSummary {
  const p = JSON.parse(readFileSync(path.join(dir, profileFile(dir)), 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const counts = new Map<number, number>();
  for (const s of p.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  const total = p.samples.length || 1;
  const area = new Map<string, number>();
  const fns = new Map<string, { fn: string; where: string; n: number }>();
  let idle = 0;
  for (const [id, n] of counts) {
    const cf = byId.get(id)!.callFrame;
    if (cf.functionName === '(idle)') {
      idle += n;
      continue;
    }
    const a = areaOf(cf.url, cf.functionName);
    area.set(a, (area.get(a) ?? 0) + n);
    const where = cf.url ? `${areaOf(cf.url, '')}:${path.basename(cf.url)}:${cf.lineNumber + 1}` : '';
    const key = `${cf.functionName || '(anonymous)'}@${where}`;
    const f = fns.get(key) ?? { fn: cf.functionName || '(anonymous)', where, n: 0 };
    f.n += n;
    fns.set(key, f);
  }
  const pct = (n: number) => round((100 * n) / total, 1);
  return {
    wallMs: round((p.endTime - p.startTime) / 1000, 0),
    idlePercent: pct(idle),
    byArea: [...area]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 20)
      .map(([a, n]) => ({ area: a, percent: pct(n) })),
    topFunctions: [...fns.values()]
      .sort((a, b) => b.n - a.n)
      .slice(0, 25)
      .map((f) => ({ fn: f.fn, where: f.where, percent: pct(f.n) })),
  };
}

export interface StatementStat {
  calls: number;
  meanMs: number;
  totalMs: number;
  rowsPerCall: number;
  query: string;
}

/** The statements that took the most execution time since the last reset. */
export async function topStatements(sql: postgres.Sql, limit = 15): Promise<StatementStat[]> {
  const rows = await sql<{ calls: number; mean: number; total: number; rows: number; query: string }[]>`
    select calls::int, mean_exec_time as mean, total_exec_time as total, rows::int, query
      from pg_stat_statements
     where dbid = (select oid from pg_database where datname = current_database())
     order by total_exec_time desc
     limit ${limit}`;
  return rows.map((r) => ({
    calls: r.calls,
    meanMs: round(r.mean, 3),
    totalMs: round(r.total, 0),
    rowsPerCall: round(r.rows / Math.max(1, r.calls), 2),
    query: r.query.replace(/\s+/g, ' ').slice(0, 160),
  }));
}
