import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';

/** A fresh database cloned from the migrated template (or, with `empty`, not migrated at all); `drop()` removes it. */
export async function createTestDatabase(opts: { empty?: boolean } = {}): Promise<{ url: string; name: string; drop(): Promise<void> }> {
  const adminUrl = inject('adminUrl');
  const template = inject('templateDb');
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    for (let i = 0; ; i++) {
      try {
        await admin.unsafe(opts.empty ? `create database "${name}"` : `create database "${name}" template "${template}"`);
        break;
      } catch (err) {
        // Two files cloning the same template at the same instant: "source database is being accessed".
        if (i > 20 || (err as { code?: string }).code !== '55006') throw err;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
      }
    }
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    name,
    drop: async () => {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
      await a.end();
    },
  };
}
