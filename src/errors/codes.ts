/**
 * The closed set of machine-readable error codes the API returns, each with its HTTP status.
 * Every error body is `{ error, code }`; the code tells a client what to do next.
 */
export const ERROR_CODES = {
  /** The request body or a parameter has the wrong shape or type (malformed JSON, missing field). Fix the request. */
  BAD_REQUEST: 400,
  /** Authentication is enabled and the request carries no valid session or token. */
  UNAUTHENTICATED: 401,
  /** A sign-in named an unknown e-mail, a wrong password or a disabled user (the answer does not say which). */
  INVALID_CREDENTIALS: 401,
  /**
   * A single sign-on (OIDC or SAML) did not complete: the sign-in attempt is unknown, expired or
   * already used, the identity provider refused it, its answer could not be verified, or the
   * identity it named may not sign in. The message says which, without secrets; start again.
   */
  SSO_FAILED: 401,
  /**
   * The caller is authenticated but its role does not allow the operation, or a state-changing
   * request signed in by session cookie came from another origin.
   */
  FORBIDDEN: 403,
  /** The named pipeline, connection or route does not exist. */
  NOT_FOUND: 404,
  /** The path exists but not with this method; the `Allow` header lists the methods it has. */
  METHOD_NOT_ALLOWED: 405,
  /** The request did not arrive in full within the server's time limit; send it again. */
  REQUEST_TIMEOUT: 408,
  /** A record with this name already exists in the project. Pick another name or update the existing one. */
  ALREADY_EXISTS: 409,
  /**
   * Authentication is off, so names are looked up in every project, and more than one project
   * holds this one (named in the message): choose one with the `Replicator-Project` header.
   */
  NAME_AMBIGUOUS: 409,
  /** The connection is referenced by a pipeline; stop or edit the pipeline first, or delete with `?force=true`. */
  CONNECTION_IN_USE: 409,
  /**
   * The change would leave no enabled user holding admin at organization scope (disabling,
   * deleting or unbinding the last one), which would lock everyone out. Make another user an
   * organization admin first.
   */
  LAST_ADMIN: 409,
  /** The workspace still holds projects; move them to another workspace or delete them first. */
  WORKSPACE_IN_USE: 409,
  /** The project still holds pipelines or connections; delete them first (the message names them). */
  PROJECT_IN_USE: 409,
  /**
   * The default workspace and the default project cannot be deleted: requests without a project of
   * their own (authentication off, a session with nowhere else to go) act in them. They may be renamed.
   */
  DEFAULT_NOT_DELETABLE: 409,
  /**
   * Deleting a pipeline whose replication slot could not be dropped on its source (unreachable, or
   * it refused): the pipeline is kept, stopped, as a forgotten slot makes the source keep its WAL.
   * Retry when the source is reachable, or delete with `?force=true` and drop the slot by hand.
   */
  SLOT_NOT_DROPPED: 409,
  /** The pipeline's current state does not allow the requested action. */
  INVALID_TRANSITION: 409,
  /** The schema proposal named in the request is no longer the pending one; read it again. */
  STALE_PROPOSAL: 409,
  /**
   * `PUT /v1/pipelines/{name}` with `If-Match` naming a version (the `ETag` a read gave) that is no
   * longer the stored one: someone changed the pipeline meanwhile. Nothing changed; read it again.
   */
  DEFINITION_CHANGED: 412,
  /** The sink refused the DDL of an approved schema change; the pipeline keeps waiting. */
  SCHEMA_CHANGE_FAILED: 409,
  /** `POST /v1/admin/bootstrap` after an organization admin exists: sign in as that admin instead. */
  ADMIN_EXISTS: 409,
  /** Sessions and API tokens exist only while authentication is enabled (`auth.mode: enabled`). */
  AUTH_DISABLED: 409,
  /**
   * `POST /v1/apply?prune=true` would delete pipelines that are not stopped (named in the message
   * and in `details.pipelines`): stop them first, or name them in the document. Nothing changed.
   */
  PRUNE_REFUSED: 409,
  /**
   * A pipeline's state, never an answer to a request: a sink table whose copy was done was dropped,
   * lost columns, or was emptied outside the pipeline. The pipeline fails rather than recreate it
   * empty; the message names each table and the backfill that copies it again.
   */
  SINK_TABLE_CHANGED: 409,
  /**
   * `POST /v1/tokens` while the user already holds the most active tokens allowed
   * (`auth.max_tokens_per_user`, 50 by default): revoke one first.
   */
  TOO_MANY_TOKENS: 409,
  /**
   * A verification or a repair compares a running pipeline's sink with its source: the pipeline is
   * stopped, paused or failed (the message says which). Start or resume it first.
   */
  PIPELINE_NOT_RUNNING: 409,
  /**
   * The pipeline has a verification queued or running already (its id is in `details.verifications`): one
   * runs at a time per pipeline. Wait for it, or cancel it.
   */
  VERIFICATION_RUNNING: 409,
  /** The request body exceeds the size limit. */
  PAYLOAD_TOO_LARGE: 413,
  /** The request body is not `application/json`. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** The request is well-formed but its values are not acceptable (pattern, reference, duplicate). */
  VALIDATION_FAILED: 422,
  /**
   * The pipeline's sink cannot be read back, so it cannot be verified: a message sink (Redis, NATS,
   * RabbitMQ, a webhook) hands its changes to consumers. Verification compares SQL sinks
   * (PostgreSQL, MySQL/MariaDB, DuckDB).
   */
  VERIFY_UNSUPPORTED: 422,
  /** The path is a WebSocket (`/v1/live`): open it with an `Upgrade: websocket` request. */
  UPGRADE_REQUIRED: 426,
  /**
   * The `Host` header names a host this service does not answer for (what DNS rebinding looks
   * like); the operator lists the service's public names in `http.allowed_hosts`.
   */
  MISDIRECTED_REQUEST: 421,
  /**
   * Opening a `/v1/live` WebSocket while the user, or the client address, already holds the most
   * allowed (`http.live_sockets_per_user`, `http.live_sockets_per_address`): close one first.
   */
  TOO_MANY_SOCKETS: 429,
  /** Too many sign-in or bootstrap attempts from this address; wait for the `Retry-After` seconds. */
  RATE_LIMITED: 429,
  /** The request's headers together exceed the size limit (16 KiB). */
  HEADERS_TOO_LARGE: 431,
  /**
   * A connection's DSN names something the service refuses: a parameter outside the allow-list
   * (one that reads server files, or injects session settings), a Unix socket or file path the
   * operator did not allow, or a control character. The message names the part; change the DSN.
   */
  INVALID_DSN: 422,
  /** An unexpected failure inside the service; details are in the service log under the request id. */
  INTERNAL: 500,
  /** The source database could not be reached to list its tables or check a backfill's tables. */
  SOURCE_UNAVAILABLE: 502,
  /** A dependency the service needs (its metadata store) is unreachable; retry later. */
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;
