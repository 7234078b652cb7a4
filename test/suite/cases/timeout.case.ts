import { it } from 'vitest';

it('never finishes within the test time-out', () => new Promise(() => {}));
