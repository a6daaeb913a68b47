import type { Transporter } from 'nodemailer';
import type { InfoLog } from '../../lib/log.js';

export interface Mailer {
  sendVerification(to: string, link: string): Promise<void>;
  sendPasswordReset(to: string, link: string): Promise<void>;
  /** An invitation to a workspace (its link carries the invitation token). */
  sendInvitation(to: string, link: string, workspaceName: string): Promise<void>;
}

/**
 * Sends verification e-mails through SMTP when `smtpUrl` is set; otherwise writes the link
 * to the log so a self-hosted operator can verify accounts without a mail server.
 */
export function createMailer(opts: { smtpUrl?: string | undefined; from: string; log: InfoLog }): Mailer {
  if (!opts.smtpUrl) {
    return {
      async sendVerification(to, link) {
        opts.log.info({ to, verification_link: link }, 'e-mail verification link (TASKHOOK_SMTP_URL is not set)');
      },
      async sendPasswordReset(to, link) {
        opts.log.info({ to, reset_link: link }, 'password reset link (TASKHOOK_SMTP_URL is not set)');
      },
      async sendInvitation(to, link, workspaceName) {
        opts.log.info(
          { to, invitation_link: link, workspace: workspaceName },
          'workspace invitation link (TASKHOOK_SMTP_URL is not set)',
        );
      },
    };
  }
  const smtpUrl = opts.smtpUrl;
  // Loaded on first use: a server without SMTP never pays for the library (about 12 MB).
  let transport: Promise<Transporter> | null = null;
  const send = async (to: string, subject: string, text: string) => {
    transport ??= import('nodemailer').then((m) => m.default.createTransport(smtpUrl));
    await (await transport).sendMail({ from: opts.from, to, subject, text });
  };
  return {
    sendVerification: (to, link) =>
      send(to, 'Verify your taskhook account', `Open this link to verify your e-mail address:\n\n${link}\n`),
    sendPasswordReset: (to, link) =>
      send(
        to,
        'Reset your taskhook password',
        `Open this link to choose a new password:\n\n${link}\n\nThe link is valid for 1 hour and works once. If you did not ask for it, ignore this e-mail.`,
      ),
    sendInvitation: (to, link, workspaceName) =>
      send(
        to,
        `You are invited to the taskhook workspace ${workspaceName}`,
        `Open this link to accept the invitation to the workspace "${workspaceName}":\n\n${link}\n\nIt works once, for an account with this e-mail address.`,
      ),
  };
}
