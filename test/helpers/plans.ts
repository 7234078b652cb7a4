/**
 * Plans as the guards read them: a connection that reports the plan of every statement it runs,
 * nested ones included (the statements inside SQL functions and triggers), with the buffers each
 * touched, through auto_explain loaded for this session only (the tests' superuser may). Used to
 * guard a plan by what it touches, never by a clock (test/todos/claim-plan.test.ts,
 * test/health/work-gauges.test.ts).
 */
import postgres from 'postgres';

/** One node of an EXPLAIN (FORMAT JSON) plan, with the fields the guards read. */
export interface Plan {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: Plan[];
}

export interface Explaining {
  /** The connection: run the statements to guard on it (one connection, the app's type options). */
  sql: postgres.Sql;
  /** The plans reported since the last call, one per statement, nested ones first, with the query text. */
  take(): { plan: Plan; text: string }[];
  end(): Promise<void>;
}

/** Shared buffers (hit + read) a plan node touched, its children included. */
export const buffersOf = (p: Plan) => Number(p['Shared Hit Blocks'] ?? 0) + Number(p['Shared Read Blocks'] ?? 0);

/** Opens an {@link Explaining} connection to `dbUrl`. */
export async function explaining(dbUrl: string): Promise<Explaining> {
  let plans: { plan: Plan; text: string }[] = [];
  const sql = postgres(dbUrl, {
    max: 1,
    types: { bigint: postgres.BigInt },
    transform: { undefined: null },
    onnotice: (n) => {
      const text = String(n.message ?? '');
      const at = text.indexOf('{');
      if (!text.startsWith('duration:') || at < 0) return;
      const doc = JSON.parse(text.slice(at)) as { 'Query Text'?: string; Plan: Plan };
      plans.push({ plan: doc.Plan, text: (doc['Query Text'] ?? '').replace(/\s+/g, ' ').trim() });
    },
  });
  await sql`load 'auto_explain'`;
  for (const [name, value] of [
    ['auto_explain.log_min_duration', '0'],
    ['auto_explain.log_analyze', 'on'],
    ['auto_explain.log_buffers', 'on'],
    ['auto_explain.log_timing', 'off'],
    ['auto_explain.log_nested_statements', 'on'],
    ['auto_explain.log_format', 'json'],
    ['auto_explain.log_level', 'notice'],
  ]) {
    await sql`select set_config(${name}, ${value}, false)`;
  }
  plans = [];
  return {
    sql,
    take() {
      const out = plans;
      plans = [];
      return out;
    },
    end: () => sql.end(),
  };
}
