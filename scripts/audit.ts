// `npm run audit`: the runtime dependencies against the registry's advisories (high and critical).
// Exit 0 clean, 1 advisories found, 3 the advisory service could not be reached (nothing checked).
import { spawnSync } from 'node:child_process';
import { auditVerdict } from './audit-verdict.js';

const npm = spawnSync('npm', ['audit', '--omit=dev', '--audit-level=high', '--json'], {
  encoding: 'utf8',
  timeout: 120_000,
});
const verdict = auditVerdict(npm.stdout ?? '');
(verdict.exitCode === 0 ? process.stdout : process.stderr).write(`${verdict.message}\n`);
process.exitCode = verdict.exitCode;
