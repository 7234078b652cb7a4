import { beforeAll, describe, it } from 'vitest';

it('passes outside the broken suite', () => {});
describe('a suite whose set-up throws', () => {
  beforeAll(() => {
    throw new Error('no Chromium at /nonexistent');
  });
  it('never runs (1)', () => {});
  it('never runs (2)', () => {});
});
