-- Secrets of a connection besides its password (sslpassword, TLS certificates and key given as
-- PEM text), sealed together with the master key as one JSON document. Which of them are set is
-- kept in clear, so that a connection can be shown (masked) without opening the seal.
ALTER TABLE connections
  ADD COLUMN secrets_sealed text,
  ADD COLUMN secret_names text[] NOT NULL DEFAULT '{}';
