import { sqlOn } from '../../support/replication-fixture.js';

/**
 * Installs, in the sink database, the check that per primary key the applied order never goes
 * backwards: every table created there with a `version` column (the sink creates its targets)
 * gets a row trigger that records an UPDATE whose new version is lower than the old one into
 * `fault_oracle.version_violations`. The load only ever increments `version`, so such an update
 * is an old row version applied again: a change applied twice or out of order.
 */
export async function installVersionGuard(sinkUrl: string): Promise<void> {
  await sqlOn(
    sinkUrl,
    `CREATE SCHEMA fault_oracle;
CREATE TABLE fault_oracle.version_violations (
  table_name text NOT NULL, id text NOT NULL, old_version bigint NOT NULL, new_version bigint NOT NULL,
  seen_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION fault_oracle.record_version_violation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.version < OLD.version THEN
    INSERT INTO fault_oracle.version_violations (table_name, id, old_version, new_version)
    VALUES (TG_TABLE_SCHEMA || '.' || TG_TABLE_NAME, OLD.id::text, OLD.version, NEW.version);
  END IF;
  RETURN NEW;
END $$;
CREATE FUNCTION fault_oracle.guard_new_table() RETURNS event_trigger LANGUAGE plpgsql AS $$
DECLARE created record;
BEGIN
  FOR created IN SELECT objid FROM pg_event_trigger_ddl_commands()
                  WHERE command_tag = 'CREATE TABLE' AND object_type = 'table' LOOP
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = created.objid AND attname = 'version' AND NOT attisdropped)
       AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = created.objid AND attname = 'id' AND NOT attisdropped) THEN
      EXECUTE format('CREATE OR REPLACE TRIGGER fault_version_guard BEFORE UPDATE ON %s FOR EACH ROW EXECUTE FUNCTION fault_oracle.record_version_violation()', created.objid::regclass);
    END IF;
  END LOOP;
END $$;
CREATE EVENT TRIGGER fault_version_guard ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
  EXECUTE FUNCTION fault_oracle.guard_new_table();`,
  );
}

export interface VersionViolation {
  table_name: string;
  id: string;
  old_version: string;
  new_version: string;
}

export const versionViolations = (sinkUrl: string): Promise<VersionViolation[]> =>
  sqlOn<VersionViolation>(
    sinkUrl,
    'SELECT table_name, id, old_version::text, new_version::text FROM fault_oracle.version_violations ORDER BY seen_at',
  );

/** Whether the guard is on `table` in the sink (the sink created it, and the event trigger fired). */
export async function guarded(sinkUrl: string, table: string): Promise<boolean> {
  const [row] = await sqlOn<{ ok: boolean }>(
    sinkUrl,
    "SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'fault_version_guard' AND tgrelid = to_regclass($1)) AS ok",
    [table],
  );
  return row?.ok === true;
}
