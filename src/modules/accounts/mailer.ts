import type { Transporter } from 'nodemailer';

export interface Mailer {
  sendVerification(to: string, link: string): Promise<void>;
}

interface Log {
  info(obj: object, msg: string): void;
}

/**
 * Sends verification e-mails through SMTP when `smtpUrl` is set; otherwise writes the link
 * to the log so a self-hosted operator can verify accounts without a mail server.
 */
export function createMailer(opts: { smtpUrl?: string | undefined; from: string; log: Log }): Mailer {
  if (!opts.smtpUrl) {
    return {
      async sendVerification(to, link) {
        opts.log.info({ to, verification_link: link }, 'e-mail verification link (TASKHOOK_SMTP_URL is not set)');
      },
    };
  }
  const smtpUrl = opts.smtpUrl;
  // Loaded on first use: a server without SMTP never pays for the library (about 12 MB).
  let transport: Promise<Transporter> | null = null;
  return {
    async sendVerification(to, link) {
      transport ??= import('nodemailer').then((m) => m.default.createTransport(smtpUrl));
      await (await transport).sendMail({
        from: opts.from,
        to,
        subject: 'Verify your taskhook account',
        text: `Open this link to verify your e-mail address:\n\n${link}\n\nThe link is valid for 24 hours.`,
      });
    },
  };
}
