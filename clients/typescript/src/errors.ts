// The service's errors as classes: one per code of its error table
// (memstrata/errors.py ERROR_CODES, reported by every transport as `error.code`).
import type { operations } from "./generated/schema.js";

/** The JSON error every operation answers with (the document's error response). */
export type ErrorBody = operations["retrieve"]["responses"][422]["content"]["application/json"]["error"];

/** Anything the service refused or failed, with the error table's code and the
 * server's own class name (`type`, e.g. `ReadOnlyError`). */
export class MemstrataError extends Error {
  /** The HTTP status the service answered with. */
  readonly status: number;
  /** The error table's code (`invalid_argument`, `not_found`, ...). */
  readonly code: string;
  /** The class the server raised (memstrata/errors.py), e.g. `ContextMissError`. */
  readonly type: string;
  /** The field at fault, when the error names one. */
  readonly field: string | undefined;
  /** Why the field was refused, when the error says. */
  readonly reason: string | undefined;
  /** Seconds to wait before sending the call again (also in the Retry-After header). */
  readonly retryAfterS: number | undefined;
  /** The operation that was called. */
  readonly operation: string;
  /** The error body as the service sent it. */
  readonly body: ErrorBody;

  constructor(operation: string, status: number, body: ErrorBody) {
    super(`${operation}: ${body.message}`);
    this.name = new.target.name;
    this.operation = operation;
    this.status = status;
    this.body = body;
    this.code = body.code;
    this.type = body.type;
    this.field = body.field;
    this.reason = body.reason;
    this.retryAfterS = body.retry_after_s;
  }
}

/** 400, 413, 422: the input was refused before anything was written (`field`, `reason`). */
export class ValidationError extends MemstrataError {}
/** 404: the session, key, card, job or item does not exist. */
export class NotFoundError extends MemstrataError {}
/** 401: no valid API key (missing, unknown, expired or revoked). */
export class AuthenticationError extends MemstrataError {}
/** 403: the key's role, clearance or tenant does not allow the call. */
export class PermissionDeniedError extends MemstrataError {}
/** 409: a concurrent writer changed the item first, or the id asked for is taken. */
export class ConflictError extends MemstrataError {}
/** 429: the key is over its request rate; retry after `retryAfterS`. */
export class RateLimitedError extends MemstrataError {}
/** 500 or 502: the service or one of its backends failed. */
export class BackendError extends MemstrataError {}
/** 503: a backend is down, the service is starting or read-only, or a write was not
 * queued; nothing was kept, retry after `retryAfterS`. */
export class BackendUnavailableError extends BackendError {}
/** 504: a flush or a rewrite did not finish within its timeout. */
export class DeadlineExceededError extends BackendError {}
/** 500: the service's configuration is invalid. */
export class ConfigError extends MemstrataError {}
/** 405: the path exists but not with this HTTP method. */
export class UnimplementedError extends MemstrataError {}

type ErrorClass = new (operation: string, status: number, body: ErrorBody) => MemstrataError;

/** The class of each code of the error table (a test checks every code has one). */
export const ERROR_CLASSES: Readonly<Record<string, ErrorClass>> = {
  invalid_argument: ValidationError,
  not_found: NotFoundError,
  unauthenticated: AuthenticationError,
  permission_denied: PermissionDeniedError,
  aborted: ConflictError,
  resource_exhausted: RateLimitedError,
  internal: BackendError,
  unavailable: BackendUnavailableError,
  deadline_exceeded: DeadlineExceededError,
  failed_precondition: ConfigError,
  unimplemented: UnimplementedError,
};

/** The class for a status whose body is not the service's error (a proxy's page). */
const BY_STATUS: Readonly<Record<number, ErrorClass>> = {
  400: ValidationError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  405: UnimplementedError,
  409: ConflictError,
  413: ValidationError,
  422: ValidationError,
  429: RateLimitedError,
  502: BackendError,
  503: BackendUnavailableError,
  504: DeadlineExceededError,
};

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== "object" || value === null) return false;
  const body = value as Record<string, unknown>;
  return typeof body.code === "string" && typeof body.type === "string" && typeof body.message === "string";
}

/** The typed error for a failed call: by the body's code, else by the HTTP status. */
export function errorFor(operation: string, status: number, payload: unknown, retryAfter: string | null): MemstrataError {
  const error = typeof payload === "object" && payload !== null ? (payload as { error?: unknown }).error : undefined;
  if (isErrorBody(error)) {
    const cls = ERROR_CLASSES[error.code] ?? BY_STATUS[status] ?? MemstrataError;
    return new cls(operation, status, error);
  }
  const seconds = retryAfter === null ? Number.NaN : Number(retryAfter);
  const body: ErrorBody = {
    code: "unknown",
    type: "HTTPError",
    message: `HTTP ${status}: the answer is not the service's error body`,
    ...(Number.isFinite(seconds) ? { retry_after_s: seconds } : {}),
  };
  return new (BY_STATUS[status] ?? MemstrataError)(operation, status, body);
}
