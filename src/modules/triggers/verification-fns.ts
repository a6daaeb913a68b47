import { invalid } from '../../http/errors.js';
import {
  DEFAULT_TOLERANCE_SECONDS,
  generateStandardSecret,
  standardSecretProblem,
  TIMESTAMPED,
  type VerificationType,
} from './signature-schemes-fns.js';
import { generateWebhookSecret } from './triggers-fns.js';
import type { TriggerRow } from './triggers-repo.js';
import type { VerificationInput } from './verification-schemas.js';

/** A trigger's `verification` as answered: never a secret. */
export interface VerificationView {
  type: VerificationType;
  tolerance_seconds?: number;
}

/** The view of a row's scheme (`{type}` for secret and github, with the tolerance for the others). */
export function verificationView(t: Pick<TriggerRow, 'verification' | 'toleranceSeconds'>): VerificationView {
  return TIMESTAMPED.has(t.verification)
    ? { type: t.verification, tolerance_seconds: t.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS }
    : { type: t.verification };
}

/**
 * The secret the owner supplied in `v` (`secret`, or `signing_secret` for slack), checked for the
 * form its scheme needs; undefined when none was given.
 * @throws AppError 400 (`verification.secret`) for a Standard Webhooks secret of the wrong form.
 */
export function suppliedSecret(v: VerificationInput): string | undefined {
  const secret = v.type === 'slack' ? v.signing_secret : v.type === 'secret' ? undefined : v.secret;
  if (secret !== undefined && v.type === 'standard_webhooks') {
    const problem = standardSecretProblem(secret);
    if (problem) throw invalid('verification.secret', problem);
  }
  return secret;
}

/** A new secret of the form the scheme uses: `whsec_…` for standard_webhooks, else `whs_…`. */
export function generateSecretFor(type: VerificationType): string {
  return type === 'standard_webhooks' ? generateStandardSecret() : generateWebhookSecret();
}

/** The stored tolerance: the requested one (or the default) for timestamped schemes, else null. */
export function toleranceOf(v: VerificationInput, current: number | null = null): number | null {
  if (!TIMESTAMPED.has(v.type)) return null;
  const requested = 'tolerance_seconds' in v ? v.tolerance_seconds : undefined;
  return requested ?? current ?? DEFAULT_TOLERANCE_SECONDS;
}

/** @throws AppError 400 (`verification.type`) when a PATCH tries to change the scheme. */
export function requireSameType(current: VerificationType, v: VerificationInput): void {
  if (v.type !== current) {
    throw invalid('verification.type', `must stay ${current}: create a new trigger for another scheme`);
  }
}

/** @throws AppError 400 (`verification`) when the secret was supplied: it is replaced by PATCH, not rotated. */
export function requireGeneratedSecret(t: Pick<TriggerRow, 'secretSupplied'>): void {
  if (t.secretSupplied) {
    throw invalid(
      'verification',
      'has a supplied secret, which the service does not rotate: PATCH verification with a new secret instead',
    );
  }
}
