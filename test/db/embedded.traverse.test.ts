import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { untraversableAncestor } from '../../src/db/embedded.js';

describe('embedded Postgres folder checks', () => {
  it('should name the first folder another user cannot traverse, and none when all can', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'coord-trav-'));
    try {
      const inner = path.join(root, 'a', 'b');
      mkdirSync(inner, { recursive: true });
      chmodSync(root, 0o755);
      chmodSync(path.join(root, 'a'), 0o700);
      const stranger = { uid: 65000, gids: [65000] };
      expect(untraversableAncestor(inner, stranger)).toBe(path.join(root, 'a'));
      chmodSync(path.join(root, 'a'), 0o711);
      expect(untraversableAncestor(inner, stranger)).toBeUndefined();
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
