// Generated from the service's OpenAPI document by `npm run generate:client`: do not edit.
// `.ci/run` fails when this file differs from what the document gives.

export interface paths {
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Metrics of this instance and the pipelines it runs, in the Prometheus text format */
        get: operations["getMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/bootstrap": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Create the first admin user, bound to admin at organization scope; works in both modes, refused with 409 ADMIN_EXISTS once an admin exists */
        post: operations["bootstrapAdmin"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/apply": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Create what is missing and update what differs (connections, then pipelines); with prune, delete what the document does not name
         * @description The whole document is checked before anything is written: a 422 lists every problem with its path (details.problems) and nothing changes. The checks that reach the servers (wal_level, tables and their keys, privileges, sink preflight) run for every pipeline the document creates or changes, on a dry run too; a source that cannot be reached is not a problem, and the plan notes it. Running pipelines whose definition changes reload it.
         */
        post: operations["applyDocument"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/audit-events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The audit trail, newest first: every state-changing call, sign-in, token and role change, with its actor, target, source address and outcome */
        get: operations["listAuditEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Sign in with e-mail and password; sets the service_session cookie (a new session id each time) */
        post: operations["login"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/logout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Sign out: ends the session the cookie names and clears the cookie (204 even without one) */
        post: operations["logout"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/session": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Who is signed in: the user, the active project and the role held there */
        get: operations["getSession"];
        /** Switch the active project of a session (a token keeps the project it was made in); 404 for a project you hold no role in */
        put: operations["switchProject"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Live sessions of the caller, or of user_id for an organization admin; never their secrets */
        get: operations["listSessions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/sessions/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** End a session at once: one's own, or anyone's for an organization admin */
        delete: operations["endSession"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/sso/{provider}/acs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** SAML assertion consumer service (HTTP-POST): completes the sign-in, sets the session cookie and redirects (302) to the app */
        post: operations["finishSamlLogin"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/sso/{provider}/callback": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** OIDC redirect URI: completes the sign-in, sets the session cookie and redirects (302) to the app */
        get: operations["finishOidcLogin"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/sso/{provider}/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Start signing in: redirects (302) to the identity provider */
        get: operations["startSsoLogin"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/sso/{provider}/metadata": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** SAML: this service's SP metadata (XML), to load into the identity provider */
        get: operations["getSamlMetadata"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/auth/sso/providers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The enabled SSO providers, for a sign-in page: names and where to start */
        get: operations["listSignInProviders"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List connections */
        get: operations["listConnections"];
        put?: never;
        /** Create a connection */
        post: operations["createConnection"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a connection */
        get: operations["getConnection"];
        /** Replace a connection (type and DSN); the name cannot change */
        put: operations["replaceConnection"];
        post?: never;
        /** Delete a connection; refused with 409 CONNECTION_IN_USE while pipelines name it, unless force=true */
        delete: operations["deleteConnection"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections/{name}/orphaned-slots/{slot}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Drop a replication slot a forced pipeline delete left on the connection's source, and forget it (also when it is gone already); 409 SLOT_NOT_DROPPED when the source cannot be reached */
        delete: operations["dropOrphanedSlot"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections/{name}/tables": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The tables a source connection's role can see, each replicable or not (and why), for choosing a pipeline's tables; connects to the source */
        get: operations["listConnectionTables"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections/{name}/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Test a stored connection: reach its server and check it is usable; answers 200 with every check, met or not (a failed check is ok: false, not an error); bounded to a few seconds */
        post: operations["testStoredConnection"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/connections/test": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Test a connection before saving it: reach its server and check it is usable (a postgres source: version, wal_level, replication rights, free slots and WAL senders), storing nothing; answers 200 with every check, met or not (a failed check is ok: false, not an error); bounded to a few seconds */
        post: operations["testConnection"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/health": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Health of this instance and the fleet; 503 when a check fails */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/live": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Live pipeline states and progress (WebSocket, JSON messages)
         * @description Open with an Upgrade: websocket request; a plain GET is answered 426. A client frame over 64 KiB is closed with 1009, more than 20 client messages in 10 s with 1008, a client with more than 4 MiB unsent with 1013. A user, and a client address, may hold a limited number of sockets (429 beyond); a socket whose token is revoked, session ended, user disabled or role removed is closed with 1008.
         */
        get: operations["openLiveFeed"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/organization": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The organization */
        get: operations["getOrganization"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** Rename the organization */
        patch: operations["updateOrganization"];
        trace?: never;
    };
    "/v1/pipelines": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List pipelines */
        get: operations["listPipelines"];
        put?: never;
        /** Create a pipeline (stopped) */
        post: operations["createPipeline"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a pipeline */
        get: operations["getPipeline"];
        /** Replace the definition of a pipeline; a running pipeline reloads it without a restart */
        put: operations["replacePipeline"];
        post?: never;
        /** Stop and delete a pipeline, dropping its replication slot and publication on the source; 409 SLOT_NOT_DROPPED keeps it when the slot cannot be dropped, unless force=true */
        delete: operations["deletePipeline"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/backfill": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Copy tables of a pipeline again (202). A streaming pipeline does it while its other tables keep streaming; the table is emptied and refilled, its changes meanwhile held and applied after. A failed pipeline is started to copy them: the way back from `SINK_TABLE_CHANGED` */
        post: operations["backfillPipeline"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/history": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The pipeline's figures over time, oldest first: a point every 10 s an instance ran it, in every state (the peak lag and the mean throughput of those seconds), kept 48 h; what the charts start from. Over a window longer than 2 h, points are merged so that the answer holds 720 at most (30 s each over 6 h, 2 min over 24 h): `resolution_seconds` says how long each covers */
        get: operations["getPipelineHistory"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Throughput, lag and counters */
        get: operations["getPipelineMetrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/progress": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Snapshot progress per table */
        get: operations["getPipelineProgress"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/resync": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Resync a stopped or failed pipeline (202): the way back after a lost or dropped slot. Drops the old slot if it still exists, creates a new one, empties and copies every table again, then streams; the pipeline starts at once and keeps its run history and counters. No body. 409 INVALID_TRANSITION in any other state (a running pipeline must be stopped first) */
        post: operations["resyncPipeline"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Run history, newest first, paged with a cursor */
        get: operations["listPipelineRuns"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/schema/approve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Approve the pending change: its DDL runs on the sink and the pipeline resumes with nothing lost */
        post: operations["approveSchemaChange"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/schema/proposed": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The schema change the pipeline waits on; 404 NOT_FOUND when none is pending */
        get: operations["getProposedSchemaChange"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/schema/reject": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Reject the pending change: the sink keeps its columns, only those are written, and the pipeline resumes */
        post: operations["rejectSchemaChange"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/state": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** Start, stop, pause or resume a pipeline; 409 INVALID_TRANSITION when its state does not allow it */
        put: operations["changePipelineState"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/verifications": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The verifications of a pipeline, newest first */
        get: operations["listVerifications"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/verifications/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One verification: where it stands, and per table what it found */
        get: operations["getVerification"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/verifications/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Cancel a queued or running verification; the instance running it stops within about a second. 409 INVALID_TRANSITION once it has ended. No body */
        post: operations["cancelVerification"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/verifications/{id}/repair": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Copy again the rows a completed verification found differing (202), through the backfill path while the pipeline streams, then verify those tables again (`repair.verification_id`). 409 INVALID_TRANSITION when the verification is not completed, found nothing, or is being repaired; 409 PIPELINE_NOT_RUNNING. No body */
        post: operations["repairVerification"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/pipelines/{name}/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Start a verification of a running pipeline (202): each table (or the named ones) is compared between the source and the sink by key ranges, live, and the differing rows found by key. One at a time per pipeline (409 VERIFICATION_RUNNING); 409 PIPELINE_NOT_RUNNING unless running; 422 VERIFY_UNSUPPORTED for a message sink */
        post: operations["verifyPipeline"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/projects": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List projects
         * @description Every project of the organization, by name, with its workspace’s id and name; ?workspace=<name> lists only that workspace’s (an unknown workspace: 400).
         */
        get: operations["listProjects"];
        put?: never;
        /**
         * Create a project
         * @description In the workspace named by `workspace` (an unknown one: 422), or the default workspace. Project names are unique in the organization, across workspaces (409 ALREADY_EXISTS).
         */
        post: operations["createProject"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/projects/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a project
         * @description Projects are named by id in paths; an id that is not a UUID names no project: 404.
         */
        get: operations["getProject"];
        put?: never;
        post?: never;
        /**
         * Delete an empty project
         * @description Deletes the project and the role bindings scoped to it; the API tokens bound to it and the sessions whose active project it is end with it. Refused with 409 PROJECT_IN_USE while it holds pipelines or connections (named in the message): delete them first. The default project is refused with 409 DEFAULT_NOT_DELETABLE.
         */
        delete: operations["deleteProject"];
        options?: never;
        head?: never;
        /**
         * Rename a project or move it to another workspace
         * @description Give `name`, `workspace` (a workspace’s name) or both. The project keeps its id, pipelines, connections, tokens and project-scoped role bindings; after a move, roles bound at the old workspace no longer reach it and those bound at the new one do.
         */
        patch: operations["updateProject"];
        trace?: never;
    };
    "/v1/role-bindings": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List role bindings
         * @description By user e-mail, then scope. Filters, each optional: user_id, scope_type, scope_id (a malformed id: 422).
         */
        get: operations["listRoleBindings"];
        put?: never;
        /**
         * Bind a role to a user at a scope
         * @description scope_type organization means the one organization (omit scope_id); admin there manages users, workspaces, projects, role bindings, SSO and the audit trail. For a workspace or project give scope_id or scope (its name), not both. An unknown user, role, scope type or scope is a 422 naming the field; the same binding twice is 409 ALREADY_EXISTS.
         */
        post: operations["createRoleBinding"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/role-bindings/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a role binding */
        get: operations["getRoleBinding"];
        put?: never;
        post?: never;
        /**
         * Remove a role binding
         * @description Refused with 409 LAST_ADMIN for the organization admin binding of the last enabled organization admin. A binding an SSO login made (source sso:<provider>) comes back at the user’s next SSO login if the provider still maps it.
         */
        delete: operations["deleteRoleBinding"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/roles": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the roles
         * @description viewer, operator, editor and admin, weakest first: each may do what the one before it may. A role bound at a scope applies in every project inside it, and a user’s strongest applies.
         */
        get: operations["listRoles"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sso/providers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List SSO providers (secrets are never shown) */
        get: operations["listSsoProviders"];
        put?: never;
        /** Create an OIDC or SAML provider */
        post: operations["createSsoProvider"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sso/providers/{name}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get an SSO provider */
        get: operations["getSsoProvider"];
        /** Replace an SSO provider; the name and kind cannot change, secrets not sent are kept */
        put: operations["replaceSsoProvider"];
        post?: never;
        /** Delete an SSO provider and the role bindings its sign-ins made */
        delete: operations["deleteSsoProvider"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tokens": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Your tokens in the active project (a project admin sees everyone's); never their secrets */
        get: operations["listTokens"];
        put?: never;
        /** Create an API token in the active project; the secret is in this response only. Made from a session, not a token */
        post: operations["createToken"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tokens/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Revoke a token at once (yours; a project admin: any of the project). Revoking twice is harmless */
        delete: operations["revokeToken"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List users
         * @description Every user of the organization, by e-mail. The password hash is never returned.
         */
        get: operations["listUsers"];
        put?: never;
        /**
         * Create a user
         * @description The e-mail is unique regardless of case (409 ALREADY_EXISTS). With a password the user may sign in with it; a weak one is refused with 422 saying why. Without one the user signs in only through SSO. A new user holds no role: bind one with POST /v1/role-bindings.
         */
        post: operations["createUser"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a user
         * @description An id that is not a UUID names no user: 404.
         */
        get: operations["getUser"];
        put?: never;
        post?: never;
        /**
         * Delete a user
         * @description Deletes the user with its role bindings, API tokens, SSO identities and sessions. To keep its records but stop it signing in, disable it instead. Refused with 409 LAST_ADMIN when the user is the last enabled one holding admin at organization scope, so that someone can always manage the service.
         */
        delete: operations["deleteUser"];
        options?: never;
        head?: never;
        /**
         * Change a user’s display name, disabled flag or password
         * @description Only the fields given change; the e-mail cannot. Disabling a user or setting its password ends all its sessions (the caller’s own too, when it changes its own password); a disabled user’s tokens stop working until it is enabled again. Refused with 409 LAST_ADMIN when the user is the last enabled one holding admin at organization scope, so that someone can always manage the service.
         */
        patch: operations["updateUser"];
        trace?: never;
    };
    "/v1/workers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The workers of the fleet, newest first */
        get: operations["listWorkers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/workspaces": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List workspaces
         * @description Every workspace of the organization, by name, with how many projects it holds.
         */
        get: operations["listWorkspaces"];
        put?: never;
        /**
         * Create a workspace
         * @description Names follow the rule of pipeline and connection names and are unique in the organization (409 ALREADY_EXISTS). A role bound at a workspace applies to every project in it.
         */
        post: operations["createWorkspace"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/workspaces/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get a workspace
         * @description An id that is not a UUID names no workspace: 404.
         */
        get: operations["getWorkspace"];
        put?: never;
        post?: never;
        /**
         * Delete an empty workspace
         * @description Deletes the workspace and the role bindings scoped to it. Refused with 409 WORKSPACE_IN_USE while it holds projects (named in the message): move them with PATCH /v1/projects/{id} or delete them first. The default workspace, where projects go when none is named, is refused with 409 DEFAULT_NOT_DELETABLE.
         */
        delete: operations["deleteWorkspace"];
        options?: never;
        head?: never;
        /**
         * Rename a workspace
         * @description Its id, projects and role bindings stay. The default workspace may be renamed too; bodies that name a workspace then use the new name.
         */
        patch: operations["updateWorkspace"];
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Connection: {
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            /** @description The DSN with its password and sslpassword shown as **** */
            dsn: string;
            id: string;
            name: string;
            /** @description Replication slots that forced pipeline deletes could not drop on this source: each holds its WAL until dropped (DELETE /v1/connections/{name}/orphaned-slots/{slot}, or by hand) */
            orphaned_slots: {
                /** @description The statement that drops it by hand on the source */
                drop_statement: string;
                /** @description The deleted pipeline that owned it */
                pipeline: string;
                /** @description Why it could not be dropped */
                reason: string;
                /** @description ISO 8601 UTC timestamp */
                since: string;
                /** @description The replication slot left on this source */
                slot: string;
            }[];
            project_id: string;
            /** @description Which TLS material is set, each shown as **** */
            tls: {
                /** @enum {string} */
                ca_cert?: "****";
                /** @enum {string} */
                client_cert?: "****";
                /** @enum {string} */
                client_key?: "****";
            };
            type: string;
            /** @description ISO 8601 UTC timestamp */
            updated_at: string;
            /** @description The pipelines that use this connection, by name */
            used_by: {
                /** @description Whether it names it as its source or its sink (a pipeline naming it as both is listed twice) */
                as: "source" | "sink";
                /** @description The pipeline that names this connection */
                pipeline: string;
                /** @description The pipeline's state */
                state: string;
            }[];
        };
        ConnectionTestResult: {
            /** @description The side of a pipeline the connection was judged as */
            as: "source" | "sink";
            checks: {
                /** @description What was found, in words; never holds a password */
                message: string;
                /** @description What was checked: reach, server_version, wal_level, replication_slots, wal_senders, replication_role, database_connect (postgres), jetstream (nats) */
                name: string;
                ok: boolean;
            }[];
            /** @description true when every check is met: the connection is usable */
            ok: boolean;
        };
        CreatedToken: components["schemas"]["Token"] & {
            /** @description the secret: shown once, send as Authorization: Bearer */
            token: string;
        };
        /** @description sink.properties of a pipeline whose sink connection is of type duckdb */
        DuckdbSinkProperties: {
            /** @description Bytes of change data that make a batch applied in one transaction (1024..1073741824), transactions kept whole as for `batch_max_events`. Default: 16777216. */
            batch_max_bytes?: string;
            /** @description Change events that make a batch applied in one transaction (1..1000000). Transactions are not split between batches, so one may hold up to twice as many; a transaction larger than that is applied in pieces. Default: 10000. */
            batch_max_events?: string;
            /** @description How long, in milliseconds, a batch may gather before it is applied (0..60000). 0 means as soon as the sink is free: the next batch gathers while one is written. Default: 0. */
            batch_max_wait_ms?: string;
            /** @description Target table of each source table, `<schema>.<table>` or `<table>` (in schema `main`); `{schema}` and `{table}` are replaced by the source table's names. The first `.` outside the placeholders separates schema and table. A missing schema is created. Two source tables may not share a target; DuckDB compares names case-insensitively. Default: {schema}.{table}. */
            table_id?: string;
        };
        /** @description Error */
        ErrorBody: {
            /** @description Machine-readable code, see docs/api/errors.md */
            code: string;
            /** @description What a program needs to act on some errors, besides the message */
            details?: {
                /** @description PRUNE_REFUSED, CONNECTION_IN_USE: the pipelines that stand in the way */
                pipelines?: string[];
                /** @description VALIDATION_FAILED of POST /v1/apply: every problem of the document, each at its path */
                problems?: {
                    message: string;
                    path: string;
                }[];
                /** @description VERIFICATION_RUNNING: the id of the verification queued or running */
                verifications?: string[];
            };
            /** @description Human-readable message */
            error: string;
        };
        /** @description sink.properties of a pipeline whose sink connection is of type mysql */
        MysqlSinkProperties: {
            /** @description Bytes of change data that make a batch applied in one transaction (1024..1073741824), transactions kept whole as for `batch_max_events`. Default: 16777216. */
            batch_max_bytes?: string;
            /** @description Change events that make a batch applied in one transaction (1..1000000). Transactions are not split between batches, so one may hold up to twice as many; a transaction larger than that is applied in pieces. Default: 10000. */
            batch_max_events?: string;
            /** @description How long, in milliseconds, a batch may gather before it is applied (0..60000). 0 means as soon as the sink is free: the next batch gathers while one is written. Default: 0. */
            batch_max_wait_ms?: string;
            /** @description `true` creates a missing target database and missing tables on start; `false` requires them to exist. Default: true. */
            create_tables?: string;
            /** @description Database the target tables and the bookkeeping tables are written to. Default: the DSN's database. */
            target_database?: string;
        } & {
            [key: string]: string;
        };
        /** @description sink.properties of a pipeline whose sink connection is of type nats */
        NatsSinkProperties: {
            /** @description Bytes of change data that make a batch published with one checkpoint (1024..1073741824), transactions kept whole as for `batch_max_events`. Default: 16777216. */
            batch_max_bytes?: string;
            /** @description Change events that make a batch published with one checkpoint (1..1000000). Transactions are not split between batches, so one may hold up to twice as many; a transaction larger than that is published in pieces. Default: 10000. */
            batch_max_events?: string;
            /** @description How long, in milliseconds, a batch may gather before it is published (0..60000). 0 means as soon as the sink is free: the next batch gathers while one is written. Default: 0. */
            batch_max_wait_ms?: string;
            /** @description Duplicate window of a stream the sink creates, in milliseconds (1000..604800000): a message whose id the stream took within the window is dropped. An existing stream keeps its own. Default: 120000. */
            duplicate_window_ms?: string;
            /** @description The JetStream stream that must capture every table's subject (letters, digits, `-` and `_`, at most 64). When it does not exist the sink creates it, capturing the subject template with each placeholder's token as `*`; an existing stream is used as it is. Default: REPLICATOR. */
            stream?: string;
            /** @description Subject each table's messages are published to; `{schema}` and `{table}` are replaced by the source table's names, which then must not hold `.`, `*`, `>` or white space. Several tables may share a subject: each message names its table. Subjects starting with `$` or `_INBOX` are refused. Default: replicator.{schema}.{table}. */
            subject?: string;
        };
        Pipeline: {
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            /** @description What the pipeline was last asked to be: stopped, running, paused */
            desired_state: string;
            /** @description Why the pipeline last failed, if it did; while a running pipeline retries (e.g. a server out of reach), the reason. Cleared once it is healthy again (the sink took a batch, or the stream caught up with an idle source), by stop, and by a successful start */
            error: string | null;
            events_per_second: number;
            /** @description Incremented on every definition change */
            generation: number;
            id: string;
            /** @description Time of the last durable checkpoint; null before the first */
            last_checkpoint_at: string | (never | null);
            name: string;
            project_id: string;
            /** @description Source WAL written after the position the sink holds durably (the source's WAL end minus the pipeline's acknowledged position), in bytes; null when not measured (stopped, source not read yet) */
            replication_lag_bytes: number | null;
            /** @description Age of the oldest source change not yet durable in the sink, whether the pipeline received it or not (paused, held for schema review, failed, its sink down, its stream behind); 0 when the sink holds everything the source wrote. Measured against the source every second while the pipeline keeps its slot; 0 when stopped. See docs/api/metrics.md, Lag */
            replication_lag_ms: number;
            /** @description WAL the source keeps for the pipeline's slot (its WAL end minus the slot's restart position), in bytes; null when not measured */
            retained_wal_bytes: number | null;
            /** @description review, auto or ignore */
            schema_policy: string;
            sink: {
                connection: string;
                properties: {
                    [key: string]: string;
                };
            };
            snapshot: {
                parallelism: number;
                partition_rows: number;
            };
            source: {
                connection: string;
                /** @description The publication the user made, when named */
                publication?: string;
                /** @description shared: reads its source connection's shared stream (one slot and walsender for all its pipelines); own: a replication slot of its own. Chosen at creation, never changed */
                slot: "shared" | "own";
                tables: string[];
            };
            /** @description stopped, starting, running, stopping, paused, pending_schema_approval */
            state: string;
            /** @description ISO 8601 UTC timestamp */
            updated_at: string;
            verify: {
                /** @description The verification schedule; null: none */
                interval: string | null;
                source_share: number;
            };
            /** @description Something to look at while it runs, e.g. the source keeping too much WAL for the pipeline's slot, or a table of the pipeline dropped at the source (see the table states of GET /v1/pipelines/{name}/progress) */
            warning: string | null;
        };
        PipelineSummary: {
            events_per_second: number;
            /** @description Time of the last durable checkpoint; null before the first */
            last_checkpoint_at: string | (never | null);
            name: string;
            /** @description The pipeline's project; with authentication off the list holds every project's */
            project_id: string;
            /** @description Age of the oldest source change not yet durable in the sink, whether the pipeline received it or not (paused, held for schema review, failed, its sink down, its stream behind); 0 when the sink holds everything the source wrote. Measured against the source every second while the pipeline keeps its slot; 0 when stopped. See docs/api/metrics.md, Lag */
            replication_lag_ms: number;
            state: string;
        };
        /** @description sink.properties of a pipeline whose sink connection is of type postgres */
        PostgresSinkProperties: {
            /** @description Bytes of change data that make a batch applied in one transaction (1024..1073741824), transactions kept whole as for `batch_max_events`. Default: 16777216. */
            batch_max_bytes?: string;
            /** @description Change events that make a batch applied in one transaction (1..1000000). Transactions are not split between batches, so one may hold up to twice as many; a transaction larger than that is applied in pieces. Default: 10000. */
            batch_max_events?: string;
            /** @description How long, in milliseconds, a batch may gather before it is applied (0..60000). 0 means as soon as the sink is free: the next batch gathers while one is written. Default: 0. */
            batch_max_wait_ms?: string;
            /** @description `true` creates missing target schemas and tables on start; `false` requires them to exist. Default: true. */
            create_tables?: string;
            /** @description Schema all target tables are written to. Default: the source table's schema. */
            target_schema?: string;
        } & {
            [key: string]: string;
        };
        Project: {
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            id: string;
            name: string;
            /** @description the name of the workspace that holds the project */
            workspace: string;
            workspace_id: string;
        };
        /** @description sink.properties of a pipeline whose sink connection is of type rabbitmq */
        RabbitmqSinkProperties: {
            /** @description Bytes of change data that make a batch published with one checkpoint (1024..1073741824), transactions kept whole as for `batch_max_events`. Default: 16777216. */
            batch_max_bytes?: string;
            /** @description Change events that make a batch published with one checkpoint (1..1000000). Transactions are not split between batches, so one may hold up to twice as many; a transaction larger than that is published in pieces. Default: 10000. */
            batch_max_events?: string;
            /** @description How long, in milliseconds, a batch may gather before it is published (0..60000). 0 means as soon as the sink is free: the next batch gathers while one is written. Default: 0. */
            batch_max_wait_ms?: string;
            /** @description Exchange each table's messages are published to; `{schema}` and `{table}` are replaced by the source table's names. Declared durable, of `exchange_type`, when missing; an existing one is used if it has that type. Default: replicator. */
            exchange?: string;
            /** @description Type of the exchange: `topic`, `direct`, `fanout` or `headers`. Default: topic. */
            exchange_type?: string;
            /** @description Whether a message no queue is bound for fails its batch (which is retried) rather than being dropped by the broker: `true` or `false`. Default: true. */
            mandatory?: string;
            /** @description Routing key of each table's messages; `{schema}` and `{table}` are replaced by the source table's names. Queues bound with it (or a pattern, on a topic exchange) receive them. Default: {schema}.{table}. */
            routing_key?: string;
        };
        /** @description sink.properties of a pipeline whose sink connection is of type redis */
        RedisSinkProperties: {
            /** @description Bytes of change data that make a batch published with one checkpoint (1024..1073741824), transactions kept whole as for `batch_max_events`. Default: 16777216. */
            batch_max_bytes?: string;
            /** @description Change events that make a batch published with one checkpoint (1..1000000). Transactions are not split between batches, so one may hold up to twice as many; a transaction larger than that is published in pieces. Default: 10000. */
            batch_max_events?: string;
            /** @description How long, in milliseconds, a batch may gather before it is published (0..60000). 0 means as soon as the sink is free: the next batch gathers while one is written. Default: 0. */
            batch_max_wait_ms?: string;
            /** @description Trims each stream to about this many entries as it is written (`XADD ... MAXLEN ~`), 0..1000000000; 0 keeps every entry. Default: 0. */
            maxlen?: string;
            /** @description Key of the stream each table is published to; `{schema}` and `{table}` are replaced by the source table's names. Several tables may share a stream: each message names its table. Default: {schema}.{table}. */
            stream?: string;
        };
        RoleBinding: {
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            id: string;
            role: string;
            scope_id: string;
            /** @description the name of the organization, workspace or project; null if it no longer exists */
            scope_name: string | null;
            scope_type: string;
            /** @description `manual`, or `sso:<provider>` for a binding an SSO login maps from groups */
            source: string;
            user_email: string;
            user_id: string;
        };
        SessionInfo: {
            organization_admin: boolean;
            /** @description the active project */
            project: {
                id: string;
                name: string;
            };
            /** @description projects the user holds a role in, to switch to */
            projects: {
                id: string;
                name: string;
                /** @description viewer, operator, editor, admin */
                role: "viewer" | "operator" | "editor" | "admin";
            }[];
            /** @description the role held in the active project */
            role: ("viewer" | "operator" | "editor" | "admin") | (never | null);
            user: {
                display_name: string;
                email: string;
                id: string;
            };
            /** @description how this request was signed in */
            via: "session" | "token";
        };
        SourceTable: {
            /** @description the source's row estimate, 0 when it has none */
            estimated_rows: number;
            /** @description why it cannot be replicated and what to do; null when it can */
            reason: string | null;
            replicable: boolean;
            /** @description schema.table */
            table: string;
        };
        SsoProvider: {
            /** @description SAML: the assertion consumer service URL (HTTP-POST) */
            acs_url?: string;
            client_id?: string;
            /** @description OIDC: whether a client secret is stored (never shown) */
            client_secret_set?: boolean;
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            enabled: boolean;
            entry_point?: string;
            id: string;
            idp_certificates?: string[];
            idp_issuer?: string;
            issuer?: string;
            kind: "oidc" | "saml";
            /** @description Where a browser starts signing in */
            login_url: string;
            /** @description SAML: this service's SP metadata */
            metadata_url?: string;
            name: string;
            /** @description OIDC: the redirect URI to register at the provider */
            redirect_uri?: string;
            role_mapping?: {
                claim: string;
                default_role?: string;
                rules: {
                    role: string;
                    /** @description The current name; null once the project or workspace is deleted (the rule then binds nothing) */
                    scope?: string | null;
                    scope_type: string;
                    value: string;
                }[];
            };
            scopes?: string;
            sp_entity_id?: string;
            /** @description SAML: whether a private key is stored (never shown) */
            sp_private_key_set?: boolean;
            /** @description ISO 8601 UTC timestamp */
            updated_at: string;
        };
        Token: {
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            /** @description ISO 8601 UTC timestamp */
            expires_at: string;
            id: string;
            /** @description ISO 8601 UTC timestamp */
            last_used_at: string | null;
            name: string;
            /** @description the first characters of the secret */
            prefix: string;
            project_id: string;
            /** @description ISO 8601 UTC timestamp */
            revoked_at: string | null;
            /** @description a cap below the user's role; null: the user's role */
            role: ("viewer" | "operator" | "editor" | "admin") | (never | null);
            user_id: string;
        };
        /** @description No valid session or token (with WWW-Authenticate: Bearer) */
        Unauthenticated: {
            /** @enum {string} */
            error: "unauthenticated";
        };
        User: {
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            /** @description a disabled user cannot sign in, and its tokens stop working */
            disabled: boolean;
            display_name: string;
            email: string;
            id: string;
            /** @description false for users who sign in only through SSO */
            password_set: boolean;
            /** @description ISO 8601 UTC timestamp */
            updated_at: string;
        };
        Verification: {
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            duration_ms: number | null;
            /** @description Why it failed */
            error: string | null;
            /** @description ISO 8601 UTC timestamp */
            finished_at: string | null;
            /** Format: uuid */
            id: string;
            pipeline: string;
            repair: {
                error: string | null;
                status: "queued" | "running" | "completed" | "failed";
                /** @description The verification of the repaired tables that follows a completed repair */
                verification_id: string | null;
            } | null;
            /** @description For a verification of a repair: the verification whose rows were repaired */
            repair_of: string | null;
            /** @description The worst of the tables' statuses, once completed; null before */
            result: "matched" | "differs" | "not_verified" | (never | null);
            /** @description Rows read at both sides */
            rows_read: number;
            source_share: number;
            /** @description ISO 8601 UTC timestamp */
            started_at: string | null;
            /** @description `queued` until the instance running the pipeline takes it (within about a second) */
            status: "queued" | "running" | "completed" | "failed" | "cancelled";
            /** @description One verdict per table, as each is done */
            tables: {
                /** @description Rows at both sides with other values */
                changed: number;
                /** @description Columns the sink cannot compare exactly, left out of the comparison (never silently) */
                columns_not_verified: {
                    column: string;
                    reason: string;
                }[];
                /** @description Rows the sink has and the source does not */
                extra: number;
                /** @description Rows the source has and the sink lacks */
                missing: number;
                /** @description Why the table is not verified, or what qualifies its verdict */
                reason?: string;
                /** @description Rows read at both sides for this table */
                rows_read: number;
                /** @description Up to 100 keys, the differing ones first */
                sample_keys: {
                    /** @description The key, by column, as the source prints it */
                    key: {
                        [key: string]: string;
                    };
                    kind: "missing" | "extra" | "changed" | "unsettled";
                }[];
                /** @description Rows counted in the sink */
                sink_rows: number;
                /** @description Rows counted at the source (each range at its own moment) */
                source_rows: number;
                /** @description `matched`: every compared row is equal at both sides; `differs`: some rows are missing, extra or changed in the sink; `not_verified`: the table could not be compared (`reason` says why: a key type without an order both sides share, or the table is being copied) */
                status: "matched" | "differs" | "not_verified";
                /** @description `<schema>.<table>` at the source */
                table: string;
                /** @description Rows the source changed at every re-read: compared neither way */
                unsettled: number;
            }[];
            /** @description The tables asked for; empty for all */
            tables_requested: string[];
            /** @description Who asked: a user, the pipeline's schedule, or a repair verifying what it copied */
            trigger: "request" | "schedule" | "repair";
        };
        /** @description sink.properties of a pipeline whose sink connection is of type webhook */
        WebhookSinkProperties: {
            /** @description Most bytes of change data in one request (1024..1073741824); the JSON body is somewhat larger. Keep it under the body size limit of the receiver. Default: 1048576. */
            batch_max_bytes?: string;
            /** @description Most change events posted in one request (1..1000000). Default: 5000. */
            batch_max_events?: string;
            /** @description How long, in milliseconds, a batch may gather before it is posted (0..60000). 0 posts it as soon as the sink is free: the next batch gathers while one is posted. Default: 0. */
            batch_max_wait_ms?: string;
            /** @description Requests made for one batch before it fails (1..20), with exponential backoff and jitter between them, or the receiver's `Retry-After` (at most 30 s). Only timeouts, connection failures, 408, 429 and 5xx answers are tried again. Default: 5. */
            max_attempts?: string;
            /** @description How long one request may take, from connecting to the last byte of the answer, in milliseconds (100..300000). A request that takes longer is abandoned and tried again. Default: 10000. */
            timeout_ms?: string;
        };
        Workspace: {
            /** @description ISO 8601 UTC timestamp */
            created_at: string;
            id: string;
            name: string;
            /** @description how many projects the workspace holds */
            project_count: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text exposition format 0.0.4 */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description No valid session or token (with WWW-Authenticate: Bearer) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Unauthenticated"];
                };
            };
        };
    };
    bootstrapAdmin: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    display_name: string;
                    /** @description e-mail address */
                    email: string;
                    /** @description at least 12 characters, at most 256, not a common or easily guessed password */
                    password: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        role_binding: {
                            role: string;
                            scope_id: string;
                            scope_type: string;
                        };
                        user: components["schemas"]["User"];
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    applyDocument: {
        parameters: {
            query?: {
                /** @description true: return the plan, change nothing */
                dry_run?: "true" | "false";
                /** @description true: also delete the project's connections and stopped pipelines the document does not name */
                prune?: "true" | "false";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description connections, each as POST /v1/connections takes it */
                    connections?: unknown[];
                    /** @description pipelines, each as POST /v1/pipelines takes it */
                    pipelines?: unknown[];
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        connections: {
                            /** @description for updated: the fields that differ */
                            changes?: string[];
                            name: string;
                            /** @description what the plan tells without comparing: a secret given in clear is never compared with the stored one and always counts as a change ('password supplied: will be replaced'); a pipeline whose source could not be reached, so its tables were not checked */
                            notes?: string[];
                            result: "created" | "updated" | "unchanged" | "deleted";
                        }[];
                        dry_run: boolean;
                        pipelines: {
                            /** @description for updated: the fields that differ */
                            changes?: string[];
                            name: string;
                            /** @description what the plan tells without comparing: a secret given in clear is never compared with the stored one and always counts as a change ('password supplied: will be replaced'); a pipeline whose source could not be reached, so its tables were not checked */
                            notes?: string[];
                            result: "created" | "updated" | "unchanged" | "deleted";
                        }[];
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listAuditEvents: {
        parameters: {
            query?: {
                /** @description e.g. pipeline.create, auth.login */
                action?: string;
                /** @description a user id */
                actor_id?: string;
                /** @description the next_cursor of a previous page */
                cursor?: string;
                /** @description a whole number of events per page, 1 to 500 (default 100) */
                limit?: string;
                outcome?: "success" | "denied" | "failure";
                project_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        events: {
                            action: string;
                            actor: {
                                /** @description the user's id (a token's user) */
                                id: string | null;
                                /** @description system, the e-mail, or "<e-mail> token <name>" */
                                name: string;
                                /** @description system, user, token or anonymous */
                                type: string;
                            };
                            /** @description ISO 8601 UTC timestamp */
                            at: string;
                            /** @description the caller's own x-request-id, kept when at most 64 characters of A-Z a-z 0-9 . _ : - */
                            client_request_id: string | null;
                            details: {
                                [key: string]: unknown;
                            };
                            id: number;
                            /** @description success, denied (401/403) or failure */
                            outcome: string;
                            project_id: string | null;
                            /** @description the service's id of the request, as answered in x-request-id */
                            request_id: string | null;
                            source_address: string | null;
                            /** @description the HTTP status answered */
                            status: number | null;
                            /** @description e.g. pipeline:orders */
                            target: string | null;
                        }[];
                        next_cursor: string | null;
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    login: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description e-mail address */
                    email: string;
                    password: string;
                    /** @description the project (name or id) to start in */
                    project?: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionInfo"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    logout: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionInfo"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    switchProject: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description project name or id */
                    project: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionInfo"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listSessions: {
        parameters: {
            query?: {
                /** @description another user's id (organization admins) */
                user_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description ISO 8601 UTC timestamp */
                        absolute_expires_at: string;
                        /** @description ISO 8601 UTC timestamp */
                        created_at: string;
                        /** @description the session this request came with */
                        current: boolean;
                        /** @description ISO 8601 UTC timestamp */
                        expires_at: string;
                        id: string;
                        /** @description ISO 8601 UTC timestamp */
                        last_seen_at: string;
                        /** @description the active project */
                        project_id: string;
                        source_address: string | null;
                        user_agent: string | null;
                        user_id: string;
                    }[];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    endSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    finishSamlLogin: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an SSO provider name, without control characters */
                provider: string;
            };
            cookie?: never;
        };
        /** @description application/x-www-form-urlencoded, as the identity provider posts it */
        requestBody: {
            content: {
                "application/x-www-form-urlencoded": {
                    RelayState?: string;
                    /** @description The base64 SAML response */
                    SAMLResponse?: string;
                } & {
                    [key: string]: unknown;
                };
            };
        };
        responses: {
            /** @description Redirect: the Location header says where */
            302: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    finishOidcLogin: {
        parameters: {
            query?: {
                code?: string;
                error?: string;
                error_description?: string;
                iss?: string;
                state?: string;
            };
            header?: never;
            path: {
                /** @description an SSO provider name, without control characters */
                provider: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Redirect: the Location header says where */
            302: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    startSsoLogin: {
        parameters: {
            query?: {
                /** @description A path on this service to return to after signing in */
                return_to?: string;
            };
            header?: never;
            path: {
                /** @description an SSO provider name, without control characters */
                provider: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Redirect: the Location header says where */
            302: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getSamlMetadata: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an SSO provider name, without control characters */
                provider: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description application/samlmetadata+xml */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": string;
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listSignInProviders: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        kind: string;
                        login_url: string;
                        name: string;
                    }[];
                };
            };
        };
    };
    listConnections: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Connection"][];
                };
            };
            /** @description No valid session or token (with WWW-Authenticate: Bearer) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Unauthenticated"];
                };
            };
        };
    };
    createConnection: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Connection URL, e.g. postgres://user:password@host:5432/db?sslmode=require */
                    dsn: string;
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name: string;
                    /** @description TLS material for sslmode=require, verify-ca or verify-full. Stored encrypted and never returned: responses show **** for what is set */
                    tls?: {
                        /** @description CA certificate(s) the server certificate must chain to as PEM text; **** on update keeps the stored one */
                        ca_cert?: string;
                        /** @description Client certificate as PEM text; **** on update keeps the stored one */
                        client_cert?: string;
                        /** @description The client certificate's private key (encrypted keys take sslpassword in the DSN) as PEM text; **** on update keeps the stored one */
                        client_key?: string;
                    };
                    /** @description Connection type: postgres, mysql, duckdb, redis, nats, rabbitmq, webhook (see docs/sinks/index.md for each one's DSN) */
                    type: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Connection"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getConnection: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Connection"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    replaceConnection: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description New DSN; a password (or sslpassword) of **** keeps the stored one while host, port, database and user are unchanged */
                    dsn: string;
                    /** @description If given, must equal the name in the path */
                    name?: string;
                    /** @description TLS material for sslmode=require, verify-ca or verify-full. Stored encrypted and never returned: responses show **** for what is set */
                    tls?: {
                        /** @description CA certificate(s) the server certificate must chain to as PEM text; **** on update keeps the stored one */
                        ca_cert?: string;
                        /** @description Client certificate as PEM text; **** on update keeps the stored one */
                        client_cert?: string;
                        /** @description The client certificate's private key (encrypted keys take sslpassword in the DSN) as PEM text; **** on update keeps the stored one */
                        client_key?: string;
                    };
                    /** @description Connection type: postgres, mysql, duckdb, redis, nats, rabbitmq, webhook (see docs/sinks/index.md for each one's DSN) */
                    type: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Connection"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    deleteConnection: {
        parameters: {
            query?: {
                /** @description true deletes even when pipelines use the connection */
                force?: "true" | "false";
            };
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    dropOrphanedSlot: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
                /** @description The orphaned replication slot, as orphaned_slots lists it */
                slot: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listConnectionTables: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SourceTable"][];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    testStoredConnection: {
        parameters: {
            query?: {
                /** @description Which side of a pipeline a postgres connection is judged as: a source (the default) must allow logical replication (wal_level, slots, WAL senders, the replication right); a sink need only be reached and logged in to. Other types are sinks only */
                as?: "source" | "sink";
            };
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectionTestResult"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    testConnection: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Which side of a pipeline a postgres connection is judged as: a source (the default) must allow logical replication (wal_level, slots, WAL senders, the replication right); a sink need only be reached and logged in to. Other types are sinks only */
                    as?: "source" | "sink";
                    /** @description Connection URL, e.g. postgres://user:password@host:5432/db?sslmode=require */
                    dsn: string;
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name?: string;
                    /** @description TLS material for sslmode=require, verify-ca or verify-full. Stored encrypted and never returned: responses show **** for what is set */
                    tls?: {
                        /** @description CA certificate(s) the server certificate must chain to as PEM text; **** on update keeps the stored one */
                        ca_cert?: string;
                        /** @description Client certificate as PEM text; **** on update keeps the stored one */
                        client_cert?: string;
                        /** @description The client certificate's private key (encrypted keys take sslpassword in the DSN) as PEM text; **** on update keeps the stored one */
                        client_key?: string;
                    };
                    /** @description Connection type: postgres, mysql, duckdb, redis, nats, rabbitmq, webhook (see docs/sinks/index.md for each one's DSN) */
                    type: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ConnectionTestResult"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        checks: {
                            /** @description ISO 8601 UTC timestamp */
                            erroring_since: string | null;
                            message: string | null;
                            name: string;
                            /** @description `ok` or `failing` */
                            status: string;
                        }[];
                        /** @description Pipelines in state running across the fleet: the caller's active project's; every project's with authentication off */
                        pipelines_running: number;
                        /** @description `ok` when every check passes, else `unavailable` */
                        status: string;
                        /** @description v<major>.<minor>.<patch> */
                        version: string;
                        /** @description Live workers of the fleet */
                        workers: number;
                    };
                };
            };
            /** @description No valid session or token (with WWW-Authenticate: Bearer) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Unauthenticated"];
                };
            };
            /** @description Default Response */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        checks: {
                            /** @description ISO 8601 UTC timestamp */
                            erroring_since: string | null;
                            message: string | null;
                            name: string;
                            /** @description `ok` or `failing` */
                            status: string;
                        }[];
                        /** @description Pipelines in state running across the fleet: the caller's active project's; every project's with authentication off */
                        pipelines_running: number;
                        /** @description `ok` when every check passes, else `unavailable` */
                        status: string;
                        /** @description v<major>.<minor>.<patch> */
                        version: string;
                        /** @description Live workers of the fleet */
                        workers: number;
                    };
                };
            };
        };
    };
    openLiveFeed: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Switching Protocols: the feed follows */
            101: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            426: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getOrganization: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description ISO 8601 UTC timestamp */
                        created_at: string;
                        id: string;
                        name: string;
                    };
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    updateOrganization: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description ISO 8601 UTC timestamp */
                        created_at: string;
                        id: string;
                        name: string;
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listPipelines: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PipelineSummary"][];
                };
            };
            /** @description No valid session or token (with WWW-Authenticate: Bearer) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Unauthenticated"];
                };
            };
        };
    };
    createPipeline: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name: string;
                    /** @description What a change of a source table's shape does: review (default) waits in pending_schema_approval; auto applies compatible changes (added columns, widened types, dropped NOT NULL) and waits for the others; ignore keeps the sink's columns and replicates only those */
                    schema_policy?: "review" | "auto" | "ignore";
                    sink: {
                        /** @description the name of an existing connection, without control characters */
                        connection: string;
                        /** @description Properties of the sink the connection's type chooses, string values; unknown keys are refused (422). postgres: PostgresSinkProperties, mysql: MysqlSinkProperties, duckdb: DuckdbSinkProperties, redis: RedisSinkProperties, nats: NatsSinkProperties, rabbitmq: RabbitmqSinkProperties, webhook: WebhookSinkProperties in components.schemas list each type's keys, their meaning and default. */
                        properties?: {
                            [key: string]: string;
                        };
                    };
                    /** @description How snapshots are cut and copied */
                    snapshot?: {
                        /** @description Partitions copied at once (default 2) */
                        parallelism?: number;
                        /** @description Rows per partition, about (default 250000) */
                        partition_rows?: number;
                    };
                    source: {
                        /** @description the name of an existing connection, without control characters */
                        connection: string;
                        /** @description A publication made at the source by its tables' owner, publishing every table of the pipeline (insert, update, delete, truncate, no row filter or column list): the service streams through it and never alters or drops it, so the source role needs no CREATE on the database nor ownership of the tables. Left out: the pipeline creates, alters and at deletion drops its own publication, replicator_<pipeline id> */
                        publication?: string;
                        /** @description How the pipeline reads its source's changes. shared: from the stream its source connection's pipelines share, one replication slot and one walsender on the source for all of them. own: from a replication slot of its own, for isolation: its own walsender, whose pace never touches the others' nor theirs its own; each such pipeline costs the source one more slot and walsender. Default: shared when left out at creation, except own for a pipeline that names a publication. 422 VALIDATION_FAILED on source.slot for shared with a publication (a shared stream publishes the union of its pipelines' tables through a publication it owns; a pipeline reading a publication the user made needs a slot of its own), and for a replacement or apply giving another mode than the stored one (the mode is chosen when a pipeline is created, as the pipeline's position lives in its slot: create a new pipeline to change it). Left out of a replacement, the stored mode is kept (a publication named then on a shared pipeline is a 422 on source.publication) */
                        slot?: "shared" | "own";
                        /** @description Tables to replicate, each "<schema>.<table>" */
                        tables: string[];
                    };
                    /** @description Scheduled verification of the sink against the source */
                    verify?: {
                        /** @description Verify the pipeline against its source this often (a duration: 6h, 90m, 1d; at least 1m), the first as soon as it streams, while it runs; left out: never on its own. See docs/operations/verify-and-repair.md */
                        interval?: string;
                        /** @description The share of the source's time the scheduled verifications may take (0.01 to 1, default 1: no rest) */
                        source_share?: number;
                    };
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pipeline"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getPipeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    /** @description The definition's version (its generation, quoted): send it as `If-Match` with a PUT so that a change someone made meanwhile is not overwritten */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pipeline"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    replacePipeline: {
        parameters: {
            query?: never;
            header?: {
                /** @description Replace only if the stored definition is still this version (the `ETag` of a read); otherwise 412 DEFINITION_CHANGED and nothing changes. `*` or no header: whatever is stored */
                "if-match"?: string;
            };
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description If given, must equal the name in the path */
                    name?: string;
                    /** @description What a change of a source table's shape does: review (default) waits in pending_schema_approval; auto applies compatible changes (added columns, widened types, dropped NOT NULL) and waits for the others; ignore keeps the sink's columns and replicates only those */
                    schema_policy?: "review" | "auto" | "ignore";
                    sink: {
                        /** @description the name of an existing connection, without control characters */
                        connection: string;
                        /** @description Properties of the sink the connection's type chooses, string values; unknown keys are refused (422). postgres: PostgresSinkProperties, mysql: MysqlSinkProperties, duckdb: DuckdbSinkProperties, redis: RedisSinkProperties, nats: NatsSinkProperties, rabbitmq: RabbitmqSinkProperties, webhook: WebhookSinkProperties in components.schemas list each type's keys, their meaning and default. */
                        properties?: {
                            [key: string]: string;
                        };
                    };
                    /** @description How snapshots are cut and copied */
                    snapshot?: {
                        /** @description Partitions copied at once (default 2) */
                        parallelism?: number;
                        /** @description Rows per partition, about (default 250000) */
                        partition_rows?: number;
                    };
                    source: {
                        /** @description the name of an existing connection, without control characters */
                        connection: string;
                        /** @description A publication made at the source by its tables' owner, publishing every table of the pipeline (insert, update, delete, truncate, no row filter or column list): the service streams through it and never alters or drops it, so the source role needs no CREATE on the database nor ownership of the tables. Left out: the pipeline creates, alters and at deletion drops its own publication, replicator_<pipeline id> */
                        publication?: string;
                        /** @description How the pipeline reads its source's changes. shared: from the stream its source connection's pipelines share, one replication slot and one walsender on the source for all of them. own: from a replication slot of its own, for isolation: its own walsender, whose pace never touches the others' nor theirs its own; each such pipeline costs the source one more slot and walsender. Default: shared when left out at creation, except own for a pipeline that names a publication. 422 VALIDATION_FAILED on source.slot for shared with a publication (a shared stream publishes the union of its pipelines' tables through a publication it owns; a pipeline reading a publication the user made needs a slot of its own), and for a replacement or apply giving another mode than the stored one (the mode is chosen when a pipeline is created, as the pipeline's position lives in its slot: create a new pipeline to change it). Left out of a replacement, the stored mode is kept (a publication named then on a shared pipeline is a 422 on source.publication) */
                        slot?: "shared" | "own";
                        /** @description Tables to replicate, each "<schema>.<table>" */
                        tables: string[];
                    };
                    /** @description Scheduled verification of the sink against the source */
                    verify?: {
                        /** @description Verify the pipeline against its source this often (a duration: 6h, 90m, 1d; at least 1m), the first as soon as it streams, while it runs; left out: never on its own. See docs/operations/verify-and-repair.md */
                        interval?: string;
                        /** @description The share of the source's time the scheduled verifications may take (0.01 to 1, default 1: no rest) */
                        source_share?: number;
                    };
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    /** @description The definition's version (its generation, quoted): send it as `If-Match` with a PUT so that a change someone made meanwhile is not overwritten */
                    etag?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pipeline"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    deletePipeline: {
        parameters: {
            query?: {
                /** @description true deletes even when the replication slot cannot be dropped on the source; the answer names it */
                force?: "true" | "false";
            };
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    /** @description Only on a forced delete that could not drop the slot: the replication slot left on the source (listed in the source connection's orphaned_slots until it is dropped) */
                    "x-orphaned-slot"?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    backfillPipeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description Tables to copy again */
                    tables: string[];
                };
            };
        };
        responses: {
            /** @description Default Response */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        /** @description The pipeline state: a failed pipeline is started to copy them (`starting`; the way back from `SINK_TABLE_CHANGED`); a stopped or paused pipeline copies them when it starts */
                        state: string;
                        tables: string[];
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getPipelineHistory: {
        parameters: {
            query?: {
                /** @description How far back: a duration up to 48h (15m, 1h, 24h); default 1h */
                window?: string;
            };
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Oldest first; a gap is a time no instance ran the pipeline */
                        points: {
                            /** @description ISO 8601 UTC timestamp */
                            at: string;
                            /** @description Rows copied per second (snapshot or backfill, all tables; copied rows are not events): mean of the seconds of the point; 0 when nothing was copied */
                            copy_rows_per_second: number;
                            /** @description Events applied per second: mean of the seconds of the point */
                            events_per_second: number;
                            /** @description Largest lag in bytes; null when not measured */
                            lag_bytes: number | null;
                            /** @description Largest lag of the seconds of the point */
                            lag_ms: number;
                            /** @description `idle`, `snapshot` or `streaming` */
                            phase: string;
                            /** @description Sink batches that failed in those seconds */
                            sink_errors: number;
                            /** @description The pipeline state at the end of the point */
                            state: string;
                        }[];
                        /** @description Seconds each point covers: 10, or more over a window longer than 2 h (120 over 24 h) */
                        resolution_seconds: number;
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getPipelineMetrics: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Events applied per second, over the last 5 s */
                        events_per_second: number;
                        /** @description Change events applied, over the life of the pipeline */
                        events_total: number;
                        /** @description ISO 8601 UTC timestamp */
                        last_checkpoint_at: string | null;
                        name: string;
                        /** @description Source WAL written after the position the sink holds durably (the source's WAL end minus the pipeline's acknowledged position), in bytes; null when not measured (stopped, source not read yet) */
                        replication_lag_bytes: number | null;
                        /** @description Age of the oldest source change not yet durable in the sink, whether the pipeline received it or not (paused, held for schema review, failed, its sink down, its stream behind); 0 when the sink holds everything the source wrote. Measured against the source every second while the pipeline keeps its slot; 0 when stopped. See docs/api/metrics.md, Lag */
                        replication_lag_seconds: number;
                        /** @description WAL the source keeps for the pipeline's slot (its WAL end minus the slot's restart position), in bytes; null when not measured */
                        retained_wal_bytes: number | null;
                        /** @description Failed sink writes, over the life of the pipeline */
                        sink_errors_total: number;
                        state: string;
                    };
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getPipelineProgress: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description `snapshot`, `streaming`, or `idle` when the pipeline is not running */
                        phase: string;
                        tables: {
                            /** @description When the table was found gone from the source; null unless `dropped` */
                            dropped_at: string | (never | null);
                            /** @description Seconds left at the rate of the copy so far; null when not copying */
                            eta_seconds: number | null;
                            /** @description The partition plan of the last copy of the table */
                            partitions: {
                                /** @description First key, null = open */
                                lower_bound: string | null;
                                partition: string;
                                rows_done: number;
                                /** @description `pending`, `copying` or `done` */
                                status: string;
                                /** @description Key after the last, null = open */
                                upper_bound: string | null;
                            }[];
                            partitions_done: number;
                            partitions_total: number;
                            /** @description 0 to 100 */
                            percent: number;
                            /** @description Why a `dropped` table is (e.g. it does not exist at the source any more), or what is wrong with a `sink_changed` table's sink table; null otherwise */
                            reason: string | null;
                            rows_done: number;
                            /** @description Estimate from the source's statistics until the copy is done */
                            rows_total: number;
                            /** @description `pending`, `snapshot` (being copied), `backfill` (being copied again), `streaming` (copied), `dropped` (gone from the source: dropped or renamed there; no longer replicated, the sink keeps its copy) or `sink_changed` (its sink table was dropped, lost columns or was emptied outside the pipeline, which failed with SINK_TABLE_CHANGED; `reason` says what, and a backfill of the table copies it again) */
                            status: "pending" | "snapshot" | "backfill" | "streaming" | "dropped" | "sink_changed";
                            table: string;
                        }[];
                    };
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    resyncPipeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        /** @description The pipeline state: `starting`, as a resync starts the pipeline at once (with a new slot, every table copied again); asked of an instance that does not run the pipeline, its state before, as its owner carries the resync out within about a second */
                        state: string;
                        /** @description The tables copied again: every table of the pipeline */
                        tables: string[];
                    };
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listPipelineRuns: {
        parameters: {
            query?: {
                /** @description next_cursor of the previous page */
                cursor?: string;
                /** @description a whole number of runs per page, 1 to 100 (default 20) */
                limit?: string;
            };
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @description Pass as `cursor` for the next page */
                        next_cursor: string | null;
                        /** @description Newest first */
                        runs: {
                            /** @description Until ended_at, or until now for the current run */
                            duration_ms: number;
                            /** @description ISO 8601 UTC timestamp */
                            ended_at: string | null;
                            error: string | null;
                            events_total: number;
                            id: string;
                            /** @description `running`, `stopped`, `failed`, `shutdown` (the process stopped), `interrupted` (it died), `deleted`, `resync` (a resync was accepted here: the runs after it stream from a new slot) */
                            outcome: string;
                            /** @description The pipeline's project */
                            project_id: string;
                            /** @description ISO 8601 UTC timestamp */
                            started_at: string;
                        }[];
                    };
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    approveSchemaChange: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    proposal_id?: string;
                } | null;
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        changes: ({
                            /** @description add_column, drop_column, rename_column, alter_type, set_not_null, drop_not_null, change_key */
                            kind: string;
                        } & {
                            [key: string]: unknown;
                        })[];
                        /** @description ISO 8601 UTC timestamp */
                        created_at: string;
                        /** @description The table as the sink has it */
                        current_columns: {
                            key: boolean;
                            name: string;
                            nullable: boolean;
                            /** @description format_type of the source, e.g. numeric(12,2) */
                            type: string;
                        }[];
                        /** @description The statements the sink runs on approval, in order */
                        ddl: string[];
                        /** @description ISO 8601 UTC timestamp */
                        decided_at: string | null;
                        decided_by: string | null;
                        /** @description Pass as proposal_id when deciding, to be sure to decide on what was read */
                        id: string;
                        /** @description The table as the source now has it */
                        proposed_columns: {
                            key: boolean;
                            name: string;
                            nullable: boolean;
                            /** @description format_type of the source, e.g. numeric(12,2) */
                            type: string;
                        }[];
                        /** @description On approve: statements not run because the sink already had their change (made by hand); empty when all ran */
                        skipped_ddl?: string[];
                        /** @description `pending`, `approved` or `rejected` */
                        status: string;
                        table: string;
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getProposedSchemaChange: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        changes: ({
                            /** @description add_column, drop_column, rename_column, alter_type, set_not_null, drop_not_null, change_key */
                            kind: string;
                        } & {
                            [key: string]: unknown;
                        })[];
                        /** @description ISO 8601 UTC timestamp */
                        created_at: string;
                        /** @description The table as the sink has it */
                        current_columns: {
                            key: boolean;
                            name: string;
                            nullable: boolean;
                            /** @description format_type of the source, e.g. numeric(12,2) */
                            type: string;
                        }[];
                        /** @description The statements the sink runs on approval, in order */
                        ddl: string[];
                        /** @description ISO 8601 UTC timestamp */
                        decided_at: string | null;
                        decided_by: string | null;
                        /** @description Pass as proposal_id when deciding, to be sure to decide on what was read */
                        id: string;
                        /** @description The table as the source now has it */
                        proposed_columns: {
                            key: boolean;
                            name: string;
                            nullable: boolean;
                            /** @description format_type of the source, e.g. numeric(12,2) */
                            type: string;
                        }[];
                        /** @description On approve: statements not run because the sink already had their change (made by hand); empty when all ran */
                        skipped_ddl?: string[];
                        /** @description `pending`, `approved` or `rejected` */
                        status: string;
                        table: string;
                    };
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    rejectSchemaChange: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    proposal_id?: string;
                } | null;
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        changes: ({
                            /** @description add_column, drop_column, rename_column, alter_type, set_not_null, drop_not_null, change_key */
                            kind: string;
                        } & {
                            [key: string]: unknown;
                        })[];
                        /** @description ISO 8601 UTC timestamp */
                        created_at: string;
                        /** @description The table as the sink has it */
                        current_columns: {
                            key: boolean;
                            name: string;
                            nullable: boolean;
                            /** @description format_type of the source, e.g. numeric(12,2) */
                            type: string;
                        }[];
                        /** @description The statements the sink runs on approval, in order */
                        ddl: string[];
                        /** @description ISO 8601 UTC timestamp */
                        decided_at: string | null;
                        decided_by: string | null;
                        /** @description Pass as proposal_id when deciding, to be sure to decide on what was read */
                        id: string;
                        /** @description The table as the source now has it */
                        proposed_columns: {
                            key: boolean;
                            name: string;
                            nullable: boolean;
                            /** @description format_type of the source, e.g. numeric(12,2) */
                            type: string;
                        }[];
                        /** @description On approve: statements not run because the sink already had their change (made by hand); empty when all ran */
                        skipped_ddl?: string[];
                        /** @description `pending`, `approved` or `rejected` */
                        status: string;
                        table: string;
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    changePipelineState: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description The action: start, stop, pause or resume */
                    state: "start" | "stop" | "pause" | "resume";
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pipeline"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listVerifications: {
        parameters: {
            query?: {
                /** @description how many, newest first, 1 to 100 (default 20) */
                limit?: string;
            };
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        verifications: components["schemas"]["Verification"][];
                    };
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getVerification: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a verification id (UUID) */
                id: string;
                /** @description a pipeline name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Verification"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    cancelVerification: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a verification id (UUID) */
                id: string;
                /** @description a pipeline name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Verification"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    repairVerification: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a verification id (UUID) */
                id: string;
                /** @description a pipeline name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Verification"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    verifyPipeline: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description a pipeline or connection name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description The share of the source's time (of the one session it reads with) the verification may take: after a read that took t, it rests t × (1 − share) / share. 1 (the default) reads without rest; 0.25 keeps it to a quarter */
                    source_share?: number;
                    /** @description The tables to verify; every table of the pipeline when absent or empty */
                    tables?: string[];
                };
            };
        };
        responses: {
            /** @description Default Response */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Verification"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listProjects: {
        parameters: {
            query?: {
                /** @description the name of an existing workspace (unknown: 422); only the projects it holds are listed */
                workspace?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Project"][];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    createProject: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name: string;
                    /** @description the name of an existing workspace (unknown: 422); absent: the default workspace */
                    workspace?: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Project"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getProject: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Project"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    deleteProject: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    updateProject: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name?: string;
                    /** @description the name of an existing workspace (unknown: 422); the project moves there */
                    workspace?: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Project"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listRoleBindings: {
        parameters: {
            query?: {
                /** @description the id of an organization, workspace or project: only the bindings at it (a UUID) */
                scope_id?: string;
                /** @description where the role applies: the whole organization, every project of a workspace, or one project */
                scope_type?: "organization" | "workspace" | "project";
                /** @description the id of a user: only its bindings (a UUID) */
                user_id?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RoleBinding"][];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    createRoleBinding: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description a role: viewer, operator, editor, admin (each may do what the one before it may) */
                    role: "viewer" | "operator" | "editor" | "admin";
                    /** @description the name of the workspace or project, instead of scope_id */
                    scope?: string;
                    /** @description the id of the workspace or project; for the organization scope omit it (or give the organization’s id) (a UUID) */
                    scope_id?: string;
                    /** @description where the role applies: the whole organization, every project of a workspace, or one project */
                    scope_type: "organization" | "workspace" | "project";
                    /** @description the id of the user (a UUID) */
                    user_id: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RoleBinding"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getRoleBinding: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RoleBinding"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    deleteRoleBinding: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listRoles: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        description: string;
                        /** @description bound at organization scope, it also grants the organization permission: users, workspaces, projects, role bindings, SSO and the audit trail */
                        manages_organization: boolean;
                        name: string;
                        /** @description the route permissions it grants in every project of its scope: read, operate, edit, manage */
                        permissions: string[];
                        /** @description 1 for the weakest; a role may do everything a lower rank may */
                        rank: number;
                    }[];
                };
            };
            /** @description No valid session or token (with WWW-Authenticate: Bearer) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Unauthenticated"];
                };
            };
        };
    };
    listSsoProviders: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SsoProvider"][];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    createSsoProvider: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description OIDC: the client id */
                    client_id?: string;
                    /** @description OIDC: the client secret; write-only, stored encrypted; on replace, omitted keeps the stored one */
                    client_secret?: string;
                    /** @description Whether sign-in through the provider is offered (default true) */
                    enabled?: boolean;
                    /** @description SAML: the identity provider's single sign-on URL (HTTP-Redirect binding) */
                    entry_point?: string;
                    /** @description SAML: the certificates whose keys may sign assertions (assertions must be signed) */
                    idp_certificates?: string[];
                    /** @description SAML: the identity provider's entity id */
                    idp_issuer?: string;
                    /** @description OIDC: the issuer URL (https), whose discovery document is read */
                    issuer?: string;
                    /** @description oidc or saml */
                    kind: string;
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name: string;
                    /** @description Maps the identity provider's groups to roles at every sign-in: the bindings of this provider are replaced, manual bindings are kept */
                    role_mapping?: {
                        /** @description The OIDC claim or SAML attribute holding the groups, e.g. "groups" (a dotted path reaches nested claims) */
                        claim: string;
                        /** @description Bound at the default project when no rule matched */
                        default_role?: "viewer" | "operator" | "editor" | "admin";
                        /** @description Every rule whose value the claim holds binds its role */
                        rules: {
                            /** @description viewer, operator, editor, admin */
                            role: "viewer" | "operator" | "editor" | "admin";
                            /** @description The project or workspace name; omitted for scope_type organization */
                            scope?: string;
                            /** @description organization, workspace, project */
                            scope_type: "organization" | "workspace" | "project";
                            /** @description A value of the claim, e.g. the group "data-eng" */
                            value: string;
                        }[];
                    };
                    /** @description OIDC: scopes to ask for (default "openid email profile") */
                    scopes?: string;
                    /** @description SAML: this service's entity id, the audience assertions must name (default: the metadata URL) */
                    sp_entity_id?: string;
                    /** @description SAML: a PEM private key to sign AuthnRequests with; write-only, stored encrypted */
                    sp_private_key?: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SsoProvider"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getSsoProvider: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an SSO provider name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SsoProvider"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    replaceSsoProvider: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an SSO provider name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description OIDC: the client id */
                    client_id?: string;
                    /** @description OIDC: the client secret; write-only, stored encrypted; on replace, omitted keeps the stored one */
                    client_secret?: string;
                    /** @description Whether sign-in through the provider is offered (default true) */
                    enabled?: boolean;
                    /** @description SAML: the identity provider's single sign-on URL (HTTP-Redirect binding) */
                    entry_point?: string;
                    /** @description SAML: the certificates whose keys may sign assertions (assertions must be signed) */
                    idp_certificates?: string[];
                    /** @description SAML: the identity provider's entity id */
                    idp_issuer?: string;
                    /** @description OIDC: the issuer URL (https), whose discovery document is read */
                    issuer?: string;
                    /** @description oidc or saml */
                    kind: string;
                    /** @description If given, must equal the name in the path */
                    name?: string;
                    /** @description Maps the identity provider's groups to roles at every sign-in: the bindings of this provider are replaced, manual bindings are kept */
                    role_mapping?: {
                        /** @description The OIDC claim or SAML attribute holding the groups, e.g. "groups" (a dotted path reaches nested claims) */
                        claim: string;
                        /** @description Bound at the default project when no rule matched */
                        default_role?: "viewer" | "operator" | "editor" | "admin";
                        /** @description Every rule whose value the claim holds binds its role */
                        rules: {
                            /** @description viewer, operator, editor, admin */
                            role: "viewer" | "operator" | "editor" | "admin";
                            /** @description The project or workspace name; omitted for scope_type organization */
                            scope?: string;
                            /** @description organization, workspace, project */
                            scope_type: "organization" | "workspace" | "project";
                            /** @description A value of the claim, e.g. the group "data-eng" */
                            value: string;
                        }[];
                    };
                    /** @description OIDC: scopes to ask for (default "openid email profile") */
                    scopes?: string;
                    /** @description SAML: this service's entity id, the audience assertions must name (default: the metadata URL) */
                    sp_entity_id?: string;
                    /** @description SAML: write-only; omitted keeps the stored key, null removes it */
                    sp_private_key?: string | (never | null);
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SsoProvider"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    deleteSsoProvider: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description an SSO provider name, without control characters */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listTokens: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Token"][];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    createToken: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description hours until the token expires (default 720, at most 8760) */
                    lifetime_hours?: number;
                    name: string;
                    /** @description viewer, operator, editor, admin */
                    role?: "viewer" | "operator" | "editor" | "admin";
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CreatedToken"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    revokeToken: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listUsers: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["User"][];
                };
            };
            /** @description No valid session or token (with WWW-Authenticate: Bearer) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Unauthenticated"];
                };
            };
        };
    };
    createUser: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description a name to show: 1 to 200 characters, not blank, without control characters */
                    display_name: string;
                    /** @description an e-mail address such as ada@example.com (at most 254 characters), unique regardless of case */
                    email: string;
                    /** @description 12 to 256 characters, not a common password nor built from the user’s e-mail or name (a refused one is a 422 that says why), stored as an argon2id hash and never returned. Absent: the user signs in only through SSO. */
                    password?: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["User"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getUser: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["User"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    deleteUser: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    updateUser: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description true ends the user’s sessions and stops its tokens; refused (409 LAST_ADMIN) for the last enabled organization admin */
                    disabled?: boolean;
                    /** @description a name to show: 1 to 200 characters, not blank, without control characters */
                    display_name?: string;
                    /** @description 12 to 256 characters, not a common password nor built from the user’s e-mail or name (a refused one is a 422 that says why), stored as an argon2id hash and never returned. Setting it ends the user’s sessions. */
                    password?: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["User"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listWorkers: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        hostname: string;
                        id: string;
                        /** @description ISO 8601 UTC timestamp */
                        last_heartbeat_at: string;
                        pid: number;
                        /** @description Pipelines of the active project it holds a live lease on (another project's are not named); every project's with authentication off */
                        pipelines: string[];
                        /** @description ISO 8601 UTC timestamp */
                        started_at: string;
                        /** @description live, stale (no heartbeat within the lease time) or stopped; removed 10 minutes after */
                        status: string;
                        version: string;
                    }[];
                };
            };
            /** @description No valid session or token (with WWW-Authenticate: Bearer) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Unauthenticated"];
                };
            };
        };
    };
    listWorkspaces: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Workspace"][];
                };
            };
            /** @description No valid session or token (with WWW-Authenticate: Bearer) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Unauthenticated"];
                };
            };
        };
    };
    createWorkspace: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Workspace"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getWorkspace: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Workspace"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    deleteWorkspace: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Default Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    updateWorkspace: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the record id (a UUID) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description 1 to 63 characters: letters, digits, "_" and "-", starting with a letter or digit */
                    name: string;
                };
            };
        };
        responses: {
            /** @description Default Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Workspace"];
                };
            };
            /** @description Error */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Error */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
