/**
 * `npm run demo`: a newcomer's first sight of the runner. On a throwaway git repository and a
 * throwaway embedded Coord server it runs the acceptance scenario — a diamond of four subtasks plus
 * an independent one, shell implementers that write and commit files, a strict Intent Map — from
 * create through advance, integration and review to cleanup, and prints a short summary. Nothing
 * outside a temp folder is touched; everything is removed at the end (`--keep` keeps it).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createClient } from '@coord/sdk';
import { advance, cleanup, integrate, review, type RunnerContext } from '../cli/runner/runner.js';
import { ensureBuilt } from './build.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const say = (s: string) => process.stdout.write(`${s}\n`);
const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8' }).trim();

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** The environment without DATABASE_URL: the demo always runs its own embedded Postgres. */
function withoutDatabaseUrl(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { DATABASE_URL: _ignored, ...rest } = env;
  return rest;
}

async function main(): Promise<number> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'coord-demo-'));
  chmodSync(tmp, 0o755); // as root, the embedded Postgres runs as `postgres` and must traverse it
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const adminToken = randomBytes(24).toString('base64url');
  say(`Coord demo in ${tmp}`);
  const server = spawn(process.execPath, ['--enable-source-maps', (await ensureBuilt()).server], {
    cwd: ROOT,
    env: {
      ...withoutDatabaseUrl(process.env),
      COORD_DATA_DIR: path.join(tmp, 'data'),
      PORT: String(port),
      COORD_ADMIN_TOKEN: adminToken,
      COORD_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let serverErr = '';
  server.stderr!.on('data', (d) => (serverErr += d));
  try {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const ok = await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline || server.exitCode !== null) throw new Error(`the server did not start:\n${serverErr}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    say(`1. Server ready at ${url} (embedded Postgres, data in ${path.join(tmp, 'data')})`);

    // The user's repository: one commit, and work in progress the runner must never touch.
    const repo = path.join(tmp, 'repo');
    mkdirSync(path.join(repo, 'src'), { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    git(repo, 'config', 'user.name', 'Demo User');
    git(repo, 'config', 'user.email', 'demo@example.invalid');
    writeFileSync(path.join(repo, 'README.md'), '# demo project\n');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'initial');
    writeFileSync(path.join(repo, 'README.md'), '# demo project\n\nwork in progress\n');
    writeFileSync(path.join(repo, 'scratch.txt'), 'untracked\n');
    const userStatus = git(repo, 'status', '--porcelain=v1');
    say(`2. Repository ${repo} at ${git(repo, 'rev-parse', '--short', 'HEAD')}, with uncommitted work: ${userStatus.split('\n').join(', ')}`);

    const admin = createClient({ baseUrl: url, token: adminToken });
    const implement =
      'mkdir -p "src/$COORD_SUBTASK_ID" && echo "$COORD_SUBTASK_SPEC" > "src/$COORD_SUBTASK_ID/README.md" && git add -A && git commit -qm "$COORD_SUBTASK_ID: $COORD_SUBTASK_SPEC"';
    await admin.agents.register({ id: 'planner' });
    await admin.agents.register({ id: 'reviewer' });
    await admin.agents.register({ id: 'builder', adapter: 'shell', command: implement });
    const owner = await admin.sessions.create({ name: 'demo-orchestrator' });
    const client = createClient({ baseUrl: url, token: owner.token });
    const id = 'task-demo';
    const subtasks: Record<string, string[]> = { api: [], cli: ['api'], sdk: ['api'], docs: ['cli', 'sdk'], ci: [] };
    await client.graphs.create({
      graph: {
        schemaVersion: 1,
        parentTask: { id, title: 'Demo slice', planner: 'planner', reviewer: 'reviewer' },
        subtasks: Object.entries(subtasks).map(([sid, deps]) => ({ id: sid, implementer: 'builder', spec: `Implement the ${sid} part.`, dependsOn: deps })),
        maxConcurrency: 2,
      },
      intentMap: {
        schemaVersion: 1,
        parentTaskId: id,
        scopePolicy: 'strict',
        subtasks: Object.keys(subtasks).map((sid) => ({ id: sid, writeIntent: [`src/${sid}/**`] })),
      },
    });
    say(`3. Graph ${id}: api → (cli, sdk) → docs, and ci alone; maxConcurrency 2; strict Intent Map`);

    const ctx: RunnerContext = { client, url, root: repo, env: process.env };
    const adv = await advance(ctx, id, 8);
    say(`4. advance: ${adv.wavesExecuted} waves, stop ${adv.stop.code}`);
    for (const w of adv.waves)
      say(
        `   wave ${w.waveNumber}: ${w.outcomes.map((o) => `${o.subtaskId} ${o.state} ${o.implementationCommit?.slice(0, 8)} in ${o.worktree.path}`).join('; ')}`,
      );
    const integ = await integrate(ctx, id);
    const record = integ.integration as { aggregateCommit: string; sourceFingerprint: string };
    say(
      `5. integrate: ${integ.branch} at ${record.aggregateCommit.slice(0, 8)} (${git(repo, 'log', '--format=%s', '--reverse', `${git(repo, 'rev-parse', 'main')}..${integ.branch}`).split('\n').length} commits in id order)`,
    );
    const reviewer = await admin.sessions.create({ name: 'demo-reviewer', agentId: 'reviewer' });
    const rev = await review({ ...ctx, client: createClient({ baseUrl: url, token: reviewer.token }) }, id, 'REVIEW_APPROVED');
    say(`6. review: ${rev.decision}, graph ${rev.state}. ${rev.authorizes.note}`);
    const clean = await cleanup(ctx, id);
    say(
      `7. cleanup: ${clean.outcomes.map((o) => `${o.subtaskId} ${(o.cleanup as { status: string }).status}`).join(', ')}; branches kept: ${git(repo, 'branch', '--list', `coord/${id}/*`).split('\n').length}`,
    );
    const untouched = git(repo, 'status', '--porcelain=v1') === userStatus;
    say(`8. Your checkout: ${untouched ? 'untouched' : 'CHANGED'} (${git(repo, 'status', '--porcelain=v1').split('\n').join(', ')})`);
    const ok = adv.stop.code === 'COMPLETED' && rev.state === 'APPROVED' && untouched;
    say(ok ? 'Demo finished: every subtask SUCCEEDED, integrated, reviewed and cleaned up.' : 'Demo did not finish as expected.');
    return ok ? 0 : 1;
  } finally {
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    if (keep) say(`Kept ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`demo failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
