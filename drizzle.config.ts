import { defineConfig } from 'drizzle-kit';

// Every module owns its tables in `src/<module>/*.table.ts`; drizzle-kit diffs them into SQL
// migrations under `migrations/` (the only place DDL lives). `generate` needs no database.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/**/*.table.ts',
  out: './migrations',
});
