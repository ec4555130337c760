-- A session's public id, for listing and ending sessions through the API; the stored HMAC of its
-- secret never leaves the service.
ALTER TABLE sessions ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX sessions_id_idx ON sessions (id);
