import { type Admission, type AdmissionControl, isRefusal } from '../limits/limits-admission.js';
import type { Target } from './proxy-attempts.js';
import { openAiError, ProxyError } from './proxy-fns.js';
import { bareOutcome, type CallOutcome } from './proxy-upstream.js';

// What the proxy service decides about a call besides forwarding it: its rate-limit admission and
// the parts of its record that do not come from an upstream answer.

/**
 * The call's RPM/TPM admission (after attribution, before the cache).
 * @throws ProxyError 429 rate_limit_exceeded (type `requests` or `tokens`) with its headers; not recorded.
 */
export async function admitCall(
  admission: Pick<AdmissionControl, 'admit'>,
  call: { workspaceUuid: string; agentUuid: string | null; platformKeyUuid: string | null },
  /** A runtime's run, admitted before its task was handed out. */
  preAdmitted = false,
): Promise<Admission> {
  const scopes = {
    workspaceUuid: call.workspaceUuid,
    agentUuid: call.agentUuid,
    platformKeyUuid: call.platformKeyUuid,
  };
  const admitted = await admission.admit(scopes, { preAdmitted });
  if (!isRefusal(admitted)) return admitted;
  const body = openAiError(admitted.message, admitted.on, 'rate_limit_exceeded');
  throw new ProxyError(429, body, admitted.headers);
}

/** What a hit records besides the answer: the target and model of the answer it replays. */
export function metaOf(target: Target, outcome: CallOutcome | null) {
  return {
    credentialUuid: target.credential.uuid,
    upstreamModel: target.upstreamModel,
    responseModel: outcome?.responseModel ?? null,
  };
}

/** The record of a call refused before anything went upstream (a reached budget, an unpriced model). */
export function refusedOutcome(
  code: 'budget_exceeded' | 'model_not_priced',
  status: number,
  message: string,
  now: number,
): CallOutcome {
  return bareOutcome(status, { code, message }, now);
}
