import { invalidParams } from './a2a-errors.js';

/**
 * A2A push notification configs (`TaskPushNotificationConfig`): their validation and the form
 * every answer shows. Pure; the SSRF check of the URL's host is the service's (it needs the policy).
 */

/** A task holds at most this many configs; replacing an existing id is always allowed. */
export const MAX_PUSH_CONFIGS = 10;
export const MAX_PUSH_URL_CHARS = 2048;
export const MAX_PUSH_SECRET_CHARS = 4096;
/** What answers show instead of a token or credentials. */
export const PUSH_SECRET_MASK = '********';

const CONFIG_ID = /^[A-Za-z0-9._~-]{1,128}$/;
/** RFC 9110 `token` (an authentication scheme). */
const SCHEME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;
const PRINTABLE = /^[\x20-\x7e]*$/;

/** A config as given, validated; `id` undefined means a new UUID. */
export interface PushConfigInput {
  taskId: string;
  id: string | undefined;
  url: string;
  token: string | undefined;
  authentication: { scheme: string; credentials: string } | undefined;
}

/**
 * Reads a `TaskPushNotificationConfig` (unknown fields and `tenant` ignored). `prefix` names the
 * fields in errors (`configuration.taskPushNotificationConfig.` when it came with a message).
 * @throws RpcError -32602 naming the field.
 */
export function parsePushConfig(value: unknown, prefix = ''): PushConfigInput {
  const field = (name: string) => `${prefix}${name}`;
  if (!isObject(value)) throw invalidParams(prefix.replace(/\.$/, '') || 'params', 'the push config must be an object');
  const { taskId, id, url, token, authentication } = value;
  if (taskId !== undefined && taskId !== null && typeof taskId !== 'string') {
    throw invalidParams(field('taskId'), 'taskId must be a string');
  }
  if (id !== undefined && id !== null && id !== '' && (typeof id !== 'string' || !CONFIG_ID.test(id))) {
    throw invalidParams(field('id'), 'id must be 1 to 128 characters of A-Z a-z 0-9 . _ ~ -');
  }
  if (typeof url !== 'string' || url === '') throw invalidParams(field('url'), 'url is required');
  if (url.length > MAX_PUSH_URL_CHARS) {
    throw invalidParams(field('url'), `url must be at most ${MAX_PUSH_URL_CHARS} characters`);
  }
  const urlProblem = urlShapeProblem(url);
  if (urlProblem) throw invalidParams(field('url'), `url ${urlProblem}`);
  if (token !== undefined && token !== null && !printable(token, 0)) {
    throw invalidParams(field('token'), `token must be at most ${MAX_PUSH_SECRET_CHARS} printable ASCII characters`);
  }
  let auth: PushConfigInput['authentication'];
  if (authentication !== undefined && authentication !== null) {
    if (!isObject(authentication)) throw invalidParams(field('authentication'), 'authentication must be an object');
    const { scheme, credentials } = authentication;
    if (typeof scheme !== 'string' || !SCHEME.test(scheme)) {
      throw invalidParams(
        field('authentication.scheme'),
        'authentication.scheme is required: an HTTP authentication scheme (a token of at most 64 characters, e.g. Bearer)',
      );
    }
    if (!printable(credentials, 1)) {
      throw invalidParams(
        field('authentication.credentials'),
        `authentication.credentials is required: 1 to ${MAX_PUSH_SECRET_CHARS} printable ASCII characters`,
      );
    }
    auth = { scheme, credentials: credentials as string };
  }
  return {
    taskId: typeof taskId === 'string' ? taskId : '',
    id: typeof id === 'string' && id !== '' ? id : undefined,
    url,
    token: typeof token === 'string' && token !== '' ? token : undefined,
    authentication: auth,
  };
}

/** Why a push URL's form is refused (absolute http(s), no user-info), or null. */
function urlShapeProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute http(s) URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (url.username || url.password) return 'must not contain credentials';
  return null;
}

function printable(value: unknown, min: number): boolean {
  return (
    typeof value === 'string' && value.length >= min && value.length <= MAX_PUSH_SECRET_CHARS && PRINTABLE.test(value)
  );
}

/** A stored config as the store hands it out (secrets still sealed). */
export interface StoredPushConfig {
  uuid: string;
  taskUuid: string;
  configId: string;
  position: number;
  url: string;
  token: string | null;
  authScheme: string | null;
  authCredentials: string | null;
}

/** The config as every answer shows it: secrets masked, absent when not set. */
export function pushConfigView(c: StoredPushConfig) {
  return {
    id: c.configId,
    taskId: c.taskUuid,
    url: c.url,
    ...(c.token !== null ? { token: PUSH_SECRET_MASK } : {}),
    ...(c.authScheme !== null ? { authentication: { scheme: c.authScheme, credentials: PUSH_SECRET_MASK } } : {}),
  };
}

/** `{taskId, id}` of Get and Delete. @throws RpcError -32602 */
export function parsePushConfigRef(params: Record<string, unknown>): { taskId: string; id: string } {
  if (typeof params.taskId !== 'string' || params.taskId === '') throw invalidParams('taskId', 'taskId is required');
  if (typeof params.id !== 'string' || params.id === '') throw invalidParams('id', 'id is required (the config id)');
  return { taskId: params.taskId, id: params.id };
}

/** `{taskId}` of List (`pageSize` and `pageToken` are accepted and ignored: one page). */
export function parsePushConfigList(params: Record<string, unknown>): { taskId: string } {
  if (typeof params.taskId !== 'string' || params.taskId === '') throw invalidParams('taskId', 'taskId is required');
  return { taskId: params.taskId };
}

/** The A2A state a notification announces, as its deliveries log names it (`a2a.working`, …). */
export function pushEventType(state: string): string {
  return `a2a.${state.replace(/^TASK_STATE_/, '').toLowerCase()}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
