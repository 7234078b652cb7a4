import { expect, it } from 'vitest';

it('passes', () => expect(1).toBe(1));
it('fails an assertion', () => expect(1).toBe(2));
