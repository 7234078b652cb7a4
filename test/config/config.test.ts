/** Configuration (seed 000 "Configuration"; docs/seeds/todo-list.md §14): defaults, ceilings, durations. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, reloadTodoConfig } from '../../src/config.js';
import { parseDuration } from '../../src/lib/duration.js';

function withToml(text: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-cfg-'));
  const file = path.join(dir, 'coord.toml');
  writeFileSync(file, text);
  return file;
}

describe('durations', () => {
  it('should parse Go durations with a day unit', () => {
    expect(parseDuration('30m')).toBe(1_800_000);
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('7d12h')).toBe(648_000_000);
    expect(parseDuration('1.5h')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('0')).toBe(0);
    expect(() => parseDuration('-5m')).toThrow(/negative/);
    expect(() => parseDuration('5 minutes')).toThrow(/invalid duration/);
  });
});

describe('the [todo] block', () => {
  it('should apply the seed defaults, except emit_events which defaults to all', () => {
    const c = loadConfig({});
    expect(c.todo).toEqual({
      emitEvents: 'all',
      claimLeaseMs: 1_800_000,
      retentionMs: 604_800_000,
      maxTitle: 500,
      maxNote: 2000,
      maxResult: 16_384,
      listLimit: 2000,
      sweepIntervalMs: 60_000,
      busyTimeoutMs: 5000,
    });
  });

  it('should read the TOML file and let COORD_TODO_* override it', () => {
    const file = withToml('[todo]\nclaim_lease = "10m"\nmax_title = 200\nemit_events = "scenario"\n');
    const c = loadConfig({ COORD_CONFIG: file, COORD_TODO_MAX_TITLE: '100' });
    expect(c.todo).toMatchObject({ claimLeaseMs: 600_000, maxTitle: 100, emitEvents: 'scenario' });
  });

  it('should reject over-ceiling values, naming the key', () => {
    for (const [toml, key] of [
      ['max_title = 501', 'max_title'],
      ['max_note = 2001', 'max_note'],
      ['max_result = 1048577', 'max_result'],
      ['max_result = 0', 'max_result'],
      ['list_limit = 100001', 'list_limit'],
      ['busy_timeout = "500us"', 'busy_timeout'],
      ['busy_timeout = "6m"', 'busy_timeout'],
      ['claim_lease = "-1m"', 'claim_lease'],
      ['claim_lease = "999999999999d"', 'claim_lease'],
      ['retention = "1000000000d"', 'retention'],
      ['retention = "soon"', 'retention'],
      ['emit_events = "some"', 'emit_events'],
      ['unknown_key = 1', 'unknown_key'],
    ]) {
      const file = withToml(`[todo]\n${toml}\n`);
      expect(() => loadConfig({ COORD_CONFIG: file }), toml).toThrow(ConfigError);
      expect(() => loadConfig({ COORD_CONFIG: file }), toml).toThrow(new RegExp(key));
    }
  });

  it('should accept "0" for claim_lease and retention (disabled) and an empty busy_timeout as 5s', () => {
    const c = loadConfig({ COORD_CONFIG: withToml('[todo]\nclaim_lease = "0"\nretention = "0"\nbusy_timeout = ""\n') });
    expect(c.todo).toMatchObject({ claimLeaseMs: 0, retentionMs: 0, busyTimeoutMs: 5000 });
  });

  it('should reload only the reloadable keys and report restart-only changes', () => {
    const file = withToml('[todo]\nclaim_lease = "10m"\nlist_limit = 100\n');
    const c = loadConfig({ COORD_CONFIG: file });
    writeFileSync(file, '[todo]\nclaim_lease = "20m"\nlist_limit = 50\nmax_note = 1000\n');
    const r = reloadTodoConfig(c);
    expect(r.applied).toEqual({ claim_lease: 1_200_000, max_note: 1000 });
    expect(r.restartRequired).toEqual(['list_limit']);
    expect(c.todo.listLimit).toBe(100);
    expect(c.todo.claimLeaseMs).toBe(1_200_000);
  });

  it('should pick up a ./coord.toml written after start-up on reload', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'coord-late-'));
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const c = loadConfig({});
      expect(c.configFile).toBeUndefined();
      writeFileSync(path.join(dir, 'coord.toml'), '[todo]\nretention = "1h"\n');
      expect(reloadTodoConfig(c).applied).toEqual({ retention: 3_600_000 });
    } finally {
      process.chdir(cwd);
    }
  });

  it('should reject a bad environment value, naming the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
  });

  it('should default group commit to batches of 64, accept 1 (off), and refuse 0', () => {
    expect(loadConfig({}).groupCommitMax).toBe(64);
    expect(loadConfig({ COORD_GROUP_COMMIT: '1' }).groupCommitMax).toBe(1);
    expect(() => loadConfig({ COORD_GROUP_COMMIT: '0' })).toThrow(/COORD_GROUP_COMMIT/);
  });

  it('should cap one team at half the replica’s streams by default, and end streams at COORD_SSE_MAX_AGE (10 min; 0 off)', () => {
    expect(loadConfig({})).toMatchObject({ maxStreams: 2000, maxStreamsPerTeam: 1000, sseMaxAgeMs: 600_000 });
    expect(loadConfig({ COORD_MAX_STREAMS: '10' })).toMatchObject({ maxStreams: 10, maxStreamsPerTeam: 5 });
    expect(loadConfig({ COORD_MAX_STREAMS: '1' }).maxStreamsPerTeam).toBe(1);
    expect(loadConfig({ COORD_MAX_STREAMS: '10', COORD_MAX_STREAMS_PER_TEAM: '10' }).maxStreamsPerTeam).toBe(10);
    expect(loadConfig({ COORD_MAX_STREAMS: '10', COORD_MAX_STREAMS_PER_TEAM: '50' }).maxStreamsPerTeam).toBe(10);
    expect(loadConfig({ COORD_SSE_MAX_AGE: '0' }).sseMaxAgeMs).toBe(0);
    expect(loadConfig({ COORD_SSE_MAX_AGE: '1h' }).sseMaxAgeMs).toBe(3_600_000);
    expect(() => loadConfig({ COORD_SSE_MAX_AGE: '10ms' })).toThrow(/COORD_SSE_MAX_AGE/);
  });
});
