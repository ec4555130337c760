/**
 * Every writing session: strict, so that a value MySQL would otherwise truncate or zero is an
 * error, and UTC, so that DATETIME values are what the source's instants are in UTC.
 * NO_BACKSLASH_ESCAPES stays off: mysql2 escapes parameters with backslashes, and LOAD DATA's
 * escapes are backslashes too.
 */
export const SESSION_SQL =
  "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION', " +
  "time_zone = '+00:00'";
