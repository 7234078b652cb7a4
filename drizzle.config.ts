import { defineConfig } from 'drizzle-kit';

// Every table is declared in `src/db/schema/<area>.ts` (the schema floor); drizzle-kit diffs them into SQL
// migrations under `migrations/` (the only place DDL lives). `generate` needs no database.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema/*.ts',
  out: './migrations',
});
