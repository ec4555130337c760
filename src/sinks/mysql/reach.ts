import mysql, { type ConnectionOptions } from 'mysql2/promise';
import { type ReachCheck, reached, unanswered, unreached, within } from '../../connections/reach-check.js';

/** A MySQL or MariaDB server: logged in to, and asked its version. */
export async function reachMysql(settings: ConnectionOptions, timeoutMs: number): Promise<ReachCheck[]> {
  let conn: mysql.Connection;
  try {
    conn = await mysql.createConnection({ ...settings, connectTimeout: timeoutMs });
  } catch (error) {
    return [unreached('the MySQL server', error)];
  }
  conn.on('error', () => {});
  try {
    const [rows] = await within(conn.query('SELECT VERSION() AS v'), timeoutMs, 'MySQL');
    const version = (rows as { v: string }[])[0]?.v ?? 'unknown';
    return [reached('the MySQL server'), { name: 'server_version', ok: true, message: `MySQL ${version}.` }];
  } catch (error) {
    return [unanswered('MySQL', error)];
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
}
