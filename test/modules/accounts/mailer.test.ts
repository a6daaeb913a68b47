import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, call, type TestApp } from '../../helpers/app.js';
import { DATABASES } from '../../helpers/databases.js';
import { uniqueEmail } from '../../helpers/factories.js';

/** A real SMTP server on loopback that keeps every message it is given. */
async function startSmtp() {
  const messages: Array<{ to: string[]; body: string }> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, done) {
      let body = '';
      stream.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      stream.on('end', () => {
        messages.push({ to: session.envelope.rcptTo.map((r) => r.address), body });
        done();
      });
    },
  });
  server.listen(0, '127.0.0.1');
  await once(server.server, 'listening');
  const { port } = server.server.address() as AddressInfo;
  return { messages, port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe.each(DATABASES)('verification e-mail through SMTP on $name', (database) => {
  let t: TestApp;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;

  beforeAll(async () => {
    smtp = await startSmtp();
    t = await buildTestApp(database, {
      config: { smtpUrl: `smtp://127.0.0.1:${smtp.port}`, smtpFrom: 'taskhook <no-reply@example.test>' },
    });
  });
  afterAll(async () => {
    await t.close();
    await smtp.close();
  });

  it('sends the link to the new address, and the link verifies the account', async () => {
    const email = uniqueEmail();
    const reg = await call(t.app, 'POST', '/auth/register', { body: { email, password: 'correct horse' } });
    expect(reg.statusCode).toBe(201);
    const message = smtp.messages.find((m) => m.to.includes(email));
    expect(message).toBeDefined();
    const body = (message?.body ?? '').replace(/=\r?\n/g, '').replace(/=3D/g, '=');
    const link = /https?:\/\/\S+\/auth\/verify_email\?token=[A-Za-z0-9_-]+/.exec(body)?.[0];
    expect(link).toBeDefined();
    const res = await call(t.app, 'GET', (link as string).slice((link as string).indexOf('/auth/')));
    expect(res.json()).toEqual({ verified: true });
    const login = await call(t.app, 'POST', '/auth/login', { body: { email, password: 'correct horse' } });
    expect(login.statusCode).toBe(200);
  });
});
