import { it } from 'vitest';

it('runs until the run is interrupted', { timeout: 120_000 }, () => new Promise((resolve) => setTimeout(resolve, 110_000)));
