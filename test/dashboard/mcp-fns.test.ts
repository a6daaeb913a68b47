import { describe, expect, it } from 'vitest';
import {
  consentRequestId,
  defaultGrantRole,
  grantableRoles,
  redirectHost,
  registrationLabel,
  safeRedirect,
} from '../../dashboard/src/mcp-fns.js';

describe("the consent page's rules", () => {
  it.each([
    ['viewer', ['viewer']],
    ['member', ['viewer', 'member']],
    ['admin', ['viewer', 'member']],
    ['owner', ['viewer', 'member']],
  ] as const)('a %s may grant %j', (held, roles) => {
    expect(grantableRoles(held)).toEqual(roles);
  });

  it.each([
    ['viewer', 'member', 'viewer'],
    ['member', 'member', 'member'],
    ['owner', 'viewer', 'viewer'],
    ['admin', undefined, 'member'],
  ] as const)('a %s who wanted %s is offered %s first', (held, wanted, shown) => {
    expect(defaultGrantRole(held, wanted)).toBe(shown);
  });

  it.each([
    ['http://127.0.0.1:4567/callback', '127.0.0.1'],
    ['https://claude.example/api/mcp/auth_callback?x=1', 'claude.example'],
    ['not a url', 'not a url'],
  ])('shows the host of %s as %s', (uri, host) => {
    expect(redirectHost(uri)).toBe(host);
  });

  it('names both registrations', () => {
    expect(registrationLabel('metadata_document')).toBe('Client ID Metadata Document');
    expect(registrationLabel('dynamic')).toBe('Registered dynamically');
  });

  it.each([
    ['?request_id=abcdefghijklmnopqrstuvwxyzABCDEF', 'abcdefghijklmnopqrstuvwxyzABCDEF'],
    ['?request_id=short', null],
    ['?request_id=has%20space%20and%20more%20than%2022', null],
    ['', null],
  ])('reads the request id of %j as %j', (search, id) => {
    expect(consentRequestId(search)).toBe(id);
  });

  it.each([
    ['http://127.0.0.1:4567/callback?code=x', 'http://127.0.0.1:4567/callback?code=x'],
    ['https://app.example/cb', 'https://app.example/cb'],
    ['javascript:alert(1)', null],
    ['/relative', null],
  ])('follows %s only when it is http(s): %s', (target, followed) => {
    expect(safeRedirect(target)).toBe(followed);
  });
});
