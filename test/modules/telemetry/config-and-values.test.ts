import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import {
  doubleToJson,
  durationMs,
  intToJson,
  isoToNanos,
  isValidId,
  nanosToIso,
  parseU64,
  timeKey,
} from '../../../src/modules/telemetry/otlp-values-fns.js';

describe('telemetry configuration', () => {
  it('defaults to 30 days and 4 MiB, and reads both variables', () => {
    expect(loadConfig({})).toMatchObject({ telemetryRetentionDays: 30, telemetryMaxBodyBytes: 4194304 });
    const set = loadConfig({ TASKHOOK_TELEMETRY_RETENTION_DAYS: '3650', TASKHOOK_TELEMETRY_MAX_BODY_BYTES: '2048' });
    expect(set).toMatchObject({ telemetryRetentionDays: 3650, telemetryMaxBodyBytes: 2048 });
  });

  it.each([
    ['TASKHOOK_TELEMETRY_RETENTION_DAYS', '0'],
    ['TASKHOOK_TELEMETRY_RETENTION_DAYS', '3651'],
    ['TASKHOOK_TELEMETRY_RETENTION_DAYS', 'week'],
    ['TASKHOOK_TELEMETRY_MAX_BODY_BYTES', '4MB'],
    ['TASKHOOK_TELEMETRY_MAX_BODY_BYTES', '10'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(name);
  });
});

describe('OTLP value conversions', () => {
  it('keeps integers exact and marks what JSON cannot hold', () => {
    expect(intToJson(9007199254740991n)).toBe(9007199254740991);
    expect(intToJson(-9007199254740992n)).toBe('-9007199254740992');
    expect(doubleToJson(Number.NaN)).toBe('NaN');
    expect(doubleToJson(Number.POSITIVE_INFINITY)).toBe('Infinity');
    expect(doubleToJson(-0.5)).toBe(-0.5);
    expect(parseU64('18446744073709551615')).toBe(18446744073709551615n);
    expect(parseU64('18446744073709551616')).toBeNull();
    expect(parseU64('-1')).toBeNull();
  });

  it('converts times between nanoseconds, ISO and sortable keys', () => {
    expect(nanosToIso(1795361443211999999n)).toBe('2026-11-22T15:30:43.211Z');
    expect(durationMs(1n, 2_500_001n)).toBe(2.5);
    expect(isoToNanos('2026-11-22T15:30:43.211999999Z')).toBe(1795361443211999999n);
    expect(isoToNanos('2026-11-22T17:30:43+02:00')).toBe(1795361443000000000n);
    for (const bad of ['2026-11-22', '2026-11-22T15:30:43', 'yesterday', '2026-13-01T00:00:00Z']) {
      expect(isoToNanos(bad)).toBeNull();
    }
    expect(timeKey(5n) < timeKey(40n)).toBe(true);
    expect(timeKey(5n)).toHaveLength(20);
  });

  it('accepts only ids of the right length that are not all zeros', () => {
    expect(isValidId('0123456789abcdef', 8)).toBe(true);
    expect(isValidId('0000000000000000', 8)).toBe(false);
    expect(isValidId('0123456789abcde', 8)).toBe(false);
    expect(isValidId('!0123456789abcdef', 8)).toBe(false);
  });
});
