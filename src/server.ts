/**
 * The process: config → database (embedded when DATABASE_URL is unset) → migrations (under an
 * advisory lock) → operator bootstrap → app → sweeps (pg-boss) → listen. Shuts down in order on
 * SIGTERM/SIGINT (drain: new requests get 503 `shutting_down`, SSE streams end, in-flight requests
 * finish within COORD_DRAIN_TIMEOUT → stop pg-boss → close the pool → stop the embedded
 * Postgres); a second signal forces exit. SIGHUP reloads the reloadable `[todo]` keys.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildApp } from './app.js';
import { lastDrain } from './http/drain.js';
import { isDatabaseUnavailable } from './db/unavailable.js';
import { bootstrapAdmin } from './tokens/tokens.bootstrap.js';
import { ConfigError, loadConfig, reloadTodoConfig } from './config.js';
import { multiHostWarning, openDb, postgresDriverPatched } from './db/client.js';
import { startEmbeddedPostgres, type EmbeddedHandle } from './db/embedded.js';
import { migrateDatabase } from './db/migrate.js';
import { startSweeper, type Sweeper } from './sweeps/boss.js';

/**
 * One server per data folder: a second `npm start` in the same folder would otherwise take the
 * first one's Postgres for an orphan and stop it. `<dataDir>/coord.pid` names the owner; a stale
 * file (its process is gone) is taken over.
 */
function claimDataDir(dataDir: string): void {
  const file = path.join(dataDir, 'coord.pid');
  mkdirSync(dataDir, { recursive: true });
  if (existsSync(file)) {
    const pid = Number(readFileSync(file, 'utf8').trim());
    let alive = false;
    try {
      if (pid && pid !== process.pid) process.kill(pid, 0);
      alive = pid > 0 && pid !== process.pid;
    } catch {
      alive = false;
    }
    if (alive) {
      console.error(
        `coord: another Coord server (pid ${pid}) is using ${dataDir}. Stop it first, or give this one its own ` +
          `COORD_DATA_DIR, or point it at the same database with DATABASE_URL (its URL is printed at start-up).`,
      );
      process.exit(1);
    }
  }
  writeFileSync(file, `${process.pid}\n`);
  process.on('exit', () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file);
    } catch {
      /* already gone */
    }
  });
}

/**
 * Node ends the process on an unhandled rejection. pg-boss 10 leaves some of its own database
 * calls unawaited (a job's complete()/fail() after the handler, in manager.js `work`): during a
 * database outage they reject with a connection error and, unhandled, would end Coord (issue
 * 18 #6). Those are logged as one warning line and Coord keeps serving (503s until the database
 * is back); any other unhandled rejection still ends the process, as Node's default does.
 */
function exitOnUnhandledRejectionUnlessDatabaseOutage(): void {
  process.on('unhandledRejection', (reason) => {
    if (isDatabaseUnavailable(reason)) {
      const code = (reason as { code?: string } | null)?.code ?? (reason as Error | null)?.message;
      console.error(`coord: warning: a background database call failed during an outage (${code}); it is retried or redone once the database is back`);
      return;
    }
    console.error('coord: unhandled rejection, exiting:', reason);
    process.exit(1);
  });
}

async function main(): Promise<void> {
  exitOnUnhandledRejectionUnlessDatabaseOutage();
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`coord: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  if (!postgresDriverPatched()) {
    console.error(
      "coord: warning: postgres.js lacks Coord's guards (porsager/postgres#1208, #1223, #1174), so a Postgres restart can crash this process and a failover can leave it on a read-only standby or hanging; " +
        'run `npx patch-package` (npm ci and npm install run it as postinstall, unless scripts are disabled; patches/README.md)',
    );
  }
  let embedded: EmbeddedHandle | undefined;
  let url = config.databaseUrl;
  if (!url) {
    claimDataDir(config.dataDir);
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, persistent: true, log: (m) => console.error(`coord: ${m}`) });
    url = embedded.url;
    // The password stays in its 0600 file; the log names the file, never the password.
    console.error(`coord: embedded Postgres in ${embedded.clusterDir}: ${embedded.redactedUrl} (password in ${embedded.passwordFile})`);
    console.error(`coord: another replica can share it while this one runs: DATABASE_URL="${embedded.urlCommand}" PORT=<another port> npm start`);
  }
  const hostsWarning = multiHostWarning(url);
  if (hostsWarning) console.error(`coord: warning: ${hostsWarning}`);
  await migrateDatabase(url);
  const sql = openDb(url, { max: config.dbPoolMax, lockTimeoutMs: config.todo.busyTimeoutMs, connectTimeoutMs: config.dbConnectTimeoutMs });
  const tokenLine = await bootstrapAdmin(sql, config.dataDir, config.adminToken);
  const app = await buildApp({ sql, config });
  let sweeper: Sweeper | undefined;
  if (config.sweeps) sweeper = await startSweeper(url, sql, config, app.log);

  let stopping: Promise<void> | undefined;
  let firstSignalAt = 0;
  const shutdown = (signal: string) => {
    if (stopping) {
      // Ctrl-C reaches the whole process group, and `tsx` relays it to this process as well:
      // a repeat within a second is the same request. A later one forces the exit.
      if (Date.now() - firstSignalAt < 1000) return;
      console.error(`coord: ${signal} again, exiting now`);
      embedded?.killNow();
      process.exit(1);
    }
    firstSignalAt = Date.now();
    app.log.info({ signal }, 'shutting down');
    // A bound on the whole shutdown: with the database unresponsive (a silent network path, not a
    // refused connection) closing pg-boss or the pool can wait on a dead socket forever. After the
    // drain timeout plus 10 s, exit anyway, stopping the embedded Postgres first.
    const bound = config.drainTimeoutMs + 10_000;
    setTimeout(() => {
      console.error(`coord: shutdown did not finish within ${bound} ms (the database does not answer?); exiting now`);
      embedded?.killNow();
      process.exit(1);
    }, bound).unref();
    stopping = (async () => {
      // Drains: new requests get 503 shutting_down, SSE streams end, in-flight requests finish
      // within COORD_DRAIN_TIMEOUT (src/http/drain.ts).
      await app.close().catch((err) => app.log.error({ err }, 'close failed'));
      const drain = lastDrain(app);
      if (drain?.cut) {
        // Requests cut at the deadline must not commit after their clients saw the connection drop:
        // end the pool now, which rolls their transactions back.
        app.log.warn({ cut: drain.cut, ms: drain.ms }, 'drain deadline reached; in-flight requests were cut and their transactions rolled back');
        await sql.end({ timeout: 0 }).catch(() => {});
      }
      await sweeper?.stop().catch(() => {});
      await sql.end({ timeout: 5 }).catch(() => {});
      await embedded?.stop();
    })().then(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGHUP', () => {
    try {
      const r = reloadTodoConfig(config);
      app.log.info({ applied: r.applied, restartRequired: r.restartRequired }, 'configuration reloaded');
      if (r.restartRequired.length) app.log.warn({ keys: r.restartRequired }, 'these [todo] keys changed but only take effect after a restart');
    } catch (err) {
      app.log.error({ err: (err as Error).message }, 'reload refused; the running configuration is unchanged');
    }
  });

  await app.listen({ port: config.port, host: config.host });
  console.error(`coord: listening on http://${config.host}:${config.port} (API docs at /docs)`);
  console.error(`coord: ${tokenLine}`);
}

main().catch((err) => {
  console.error(`coord: failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
