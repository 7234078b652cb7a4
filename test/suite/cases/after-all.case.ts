import { afterAll, it } from 'vitest';

afterAll(() => {
  throw new Error('clean-up failed');
});
it('passes before a throwing clean-up', () => {});
