/**
 * Reading DATABASE_URL's hosts and `target_session_attrs` (src/db/client.ts), and the start-up
 * warning for several hosts without `target_session_attrs=primary` (docs/operations.md, high
 * availability). Pure text: the unit tier.
 */
import { describe, expect, it } from 'vitest';
import { describeDatabaseUrl, multiHostWarning } from '../../src/db/client.js';
import { isDatabaseUnavailable } from '../../src/db/unavailable.js';

describe('DATABASE_URL with several hosts', () => {
  it('should read the hosts and target_session_attrs, with or without credentials', () => {
    expect(describeDatabaseUrl('postgres://coord:p%40ss@db1:5432,db2:5433/coord?sslmode=require&target_session_attrs=primary')).toEqual({
      hosts: ['db1:5432', 'db2:5433'],
      targetSessionAttrs: 'primary',
    });
    expect(describeDatabaseUrl('postgresql://db1/coord')).toEqual({ hosts: ['db1'], targetSessionAttrs: undefined });
  });

  it('should warn for several hosts unless target_session_attrs=primary', () => {
    expect(multiHostWarning('postgres://u@db1,db2/coord?target_session_attrs=primary')).toBeUndefined();
    expect(multiHostWarning('postgres://u@db1/coord')).toBeUndefined();
    expect(multiHostWarning('postgres://u@db1,db2/coord?target_session_attrs=read-write')).toMatch(
      /names 2 hosts with target_session_attrs=read-write: connections can land on a hot standby.*use target_session_attrs=primary/,
    );
    expect(multiHostWarning('postgres://u@db1,db2/coord')).toMatch(/names 2 hosts with no target_session_attrs/);
  });
});

describe('what counts as the database being unavailable', () => {
  it('should count every connection exception (class 08), pgbouncer’s 08P01 included, and no other SQLSTATE class', () => {
    for (const code of ['08000', '08001', '08003', '08004', '08006', '08007', '08P01', '57P01', '25006', 'CONNECTION_CLOSED', 'ECONNREFUSED']) {
      expect(isDatabaseUnavailable({ code }), code).toBe(true);
    }
    for (const code of ['23505', '42P01', '22P02', '0800', '080000']) expect(isDatabaseUnavailable({ code }), code).toBe(false);
  });
});
