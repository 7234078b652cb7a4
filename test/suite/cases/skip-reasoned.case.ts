import { it } from 'vitest';

it('passes', () => {});
it.skip('is skipped on purpose, statically', () => {});
it.todo('is still to be written');
it('is skipped at run time and says why', (ctx) => ctx.skip('the stand-in model server is off in this case'));
