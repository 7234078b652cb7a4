import { describe, expect, it } from 'vitest';
import { checkMembers } from '../../src/scenarios/scenarios.plan.js';

const names = (ms: { name: string }[]) => ms.map((m) => m.name);

describe('checkMembers (seed 000 scenario graph rules)', () => {
  it('should order seeds after their dependencies and keep request order otherwise', () => {
    const out = checkMembers([
      { name: 'ship', task: 's', dependsOn: ['api', 'ui'] },
      { name: 'ui', task: 'u', dependsOn: ['api'] },
      { name: 'notes' },
      { name: 'api', task: 'a' },
    ]);
    expect(names(out)).toEqual(['api', 'ui', 'ship', 'notes']);
  });

  it('should report the first rule broken in the seed’s order', () => {
    // Unknown beats self reference; self reference beats a missing task.
    expect(() => checkMembers([{ name: 'a', dependsOn: ['a', 'zz'] }])).toThrow(/unknown member "zz"/);
    expect(() => checkMembers([{ name: 'a', dependsOn: ['a'] }])).toThrow(/cannot depend on itself/);
  });

  it('should refuse two members naming the same session', () => {
    expect(() =>
      checkMembers([
        { name: 'a', session: 's-1' },
        { name: 'b', session: 's-1' },
      ]),
    ).toThrow(/same session/);
  });

  it('should report a long cycle as its path', () => {
    try {
      checkMembers([
        { name: 'a', task: 'x', dependsOn: ['b'] },
        { name: 'b', task: 'x', dependsOn: ['c'] },
        { name: 'c', task: 'x', dependsOn: ['a'] },
      ]);
      expect.unreachable();
    } catch (err) {
      expect((err as { extra: { cycle: string[] } }).extra.cycle).toEqual(['a', 'b', 'c', 'a']);
    }
  });
});
