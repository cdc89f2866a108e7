// One method per operation of the OpenAPI document: names, request bodies and results
// all come from the generated files (src/generated), never written here by hand.
import createClient, { type Client as FetchClient } from "openapi-fetch";

import { errorFor } from "./errors.js";
import { OPERATIONS, type OperationName } from "./generated/operations.js";
import type { operations, paths } from "./generated/schema.js";

type Json<T> = T extends { content: { "application/json": infer B } } ? B : never;

/** The JSON body an operation takes (`undefined` for one that takes none). */
export type RequestOf<K extends OperationName> = operations[K] extends { requestBody: infer R }
  ? Json<R>
  : operations[K] extends { requestBody?: infer R }
    ? Json<NonNullable<R>> | undefined
    : undefined;

/** What an operation answers with when it succeeds. */
export type ResponseOf<K extends OperationName> = operations[K] extends {
  responses: { 200: infer R };
}
  ? Json<R>
  : unknown;

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call (e.g. `AbortSignal.timeout(5000)`). */
  signal?: AbortSignal;
  /** Headers added to this call. */
  headers?: Record<string, string>;
}

/** One method per operation: its body is optional when every field of it is. */
export type Methods = {
  [K in OperationName]: {} extends NonNullable<RequestOf<K>>
    ? (body?: RequestOf<K>, options?: CallOptions) => Promise<ResponseOf<K>>
    : (body: RequestOf<K>, options?: CallOptions) => Promise<ResponseOf<K>>;
};

/** How to reach the service. */
export interface ClientOptions {
  /** The service, e.g. `http://127.0.0.1:8080` (default: `MEMSTRATA_URL`, else that). */
  url?: string;
  /** The API key, sent as `Authorization: Bearer <key>` (default: `MEMSTRATA_API_KEY`). */
  apiKey?: string;
  /** Headers sent with every call. */
  headers?: Record<string, string>;
  /** A fetch to use instead of the global one (a proxy agent, a recorder). */
  fetch?: (input: Request) => Promise<Response>;
}

const DEFAULT_URL = "http://127.0.0.1:8080";

function environment(name: string): string | undefined {
  // Node's process.env where there is one; nothing in a browser.
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  const value = env?.[name];
  return value === undefined || value === "" ? undefined : value;
}

/** A client of `memstrata serve` over REST. Failed calls reject with the typed errors of
 * `./errors.js` (`ValidationError`, `NotFoundError`, `AuthenticationError`, ...). */
export interface Client extends Methods {}

export class Client {
  /** The service's base URL. */
  readonly url: string;
  readonly #fetch: FetchClient<paths>;

  constructor(options: ClientOptions = {}) {
    this.url = (options.url ?? environment("MEMSTRATA_URL") ?? DEFAULT_URL).replace(/\/+$/, "");
    const apiKey = options.apiKey ?? environment("MEMSTRATA_API_KEY");
    const headers: Record<string, string> = { ...options.headers };
    if (apiKey !== undefined && apiKey !== "") headers.Authorization = `Bearer ${apiKey}`;
    this.#fetch = createClient<paths>({
      baseUrl: this.url,
      headers,
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    });
  }

  /** Calls `operation` by name (what each method does). */
  async call<K extends OperationName>(
    operation: K,
    body?: RequestOf<K>,
    options: CallOptions = {},
  ): Promise<ResponseOf<K>> {
    const { path, method } = OPERATIONS[operation];
    const init: Record<string, unknown> = {};
    if (body !== undefined) init.body = body;
    else if (method === "post") init.body = {};
    if (options.signal !== undefined) init.signal = options.signal;
    if (options.headers !== undefined) init.headers = options.headers;
    // The path and method come from the same document as the types: the generic
    // request is typed by Methods above, not here.
    const request = this.#fetch.request as (
      method: string,
      url: string,
      init: Record<string, unknown>,
    ) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    const { data, error, response } = await request(method, path, init);
    if (!response.ok) {
      throw errorFor(operation, response.status, error, response.headers.get("retry-after"));
    }
    return data as ResponseOf<K>;
  }
}

for (const name of Object.keys(OPERATIONS) as OperationName[]) {
  Object.defineProperty(Client.prototype, name, {
    value: function (this: Client, body?: unknown, options?: CallOptions) {
      return this.call(name, body as RequestOf<typeof name>, options);
    },
    writable: true,
    configurable: true,
  });
}

/** Every operationId of the document the client was generated from. */
export const OPERATION_NAMES: readonly OperationName[] = Object.freeze(Object.keys(OPERATIONS) as OperationName[]);
