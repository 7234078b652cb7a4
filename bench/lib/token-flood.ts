/**
 * The attacker of bench/auth-flood.ts, in a process of its own (as an attacker is): sends
 * `count` `GET /v1/me` requests with random bearer tokens to `base`, `concurrency` at a time.
 * Prints `started` on a line of stdout at its first answer and, at the end, the statuses it got
 * as JSON on a line.
 *
 *   node --import tsx bench/lib/token-flood.ts <base> <count> <concurrency>
 */
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';

const [base, countArg, concurrencyArg] = process.argv.slice(2);
const count = Number(countArg);
const concurrency = Number(concurrencyArg);
const pool = new Pool(base, { connections: concurrency, pipelining: 1 });
const statuses: Record<string, number> = {};
let sent = 0;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (sent < count) {
      sent++;
      const res = await pool.request({ method: 'GET', path: '/v1/me', headers: { authorization: `Bearer coord_${randomBytes(32).toString('base64url')}` } });
      await res.body.text();
      if (Object.keys(statuses).length === 0) process.stdout.write('started\n');
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    }
  }),
);
await pool.close();
process.stdout.write(`${JSON.stringify(statuses)}\n`);
