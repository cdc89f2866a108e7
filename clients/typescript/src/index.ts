// ctxstrata: the TypeScript client of memstrata serve (see README.md).
export { Client, OPERATION_NAMES } from "./client.js";
export type { CallOptions, ClientOptions, Methods, RequestOf, ResponseOf } from "./client.js";
export {
  AuthenticationError,
  BackendError,
  BackendUnavailableError,
  ConfigError,
  ConflictError,
  DeadlineExceededError,
  ERROR_CLASSES,
  MemstrataError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitedError,
  UnimplementedError,
  ValidationError,
  errorFor,
} from "./errors.js";
export type { ErrorBody } from "./errors.js";
export { OPERATIONS } from "./generated/operations.js";
export type { OperationName } from "./generated/operations.js";
export type { components, operations, paths } from "./generated/schema.js";

/** A schema of the document by name, e.g. `Schema<"ContextBundle">`. */
export type Schema<Name extends keyof import("./generated/schema.js").components["schemas"]> =
  import("./generated/schema.js").components["schemas"][Name];
