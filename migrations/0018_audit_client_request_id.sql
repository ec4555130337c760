-- The id a caller sent in `x-request-id`, kept apart from the service's own request id: the
-- service makes its own ids, and a caller's is stored only when short and of a safe alphabet.
ALTER TABLE audit_events ADD COLUMN client_request_id text;
