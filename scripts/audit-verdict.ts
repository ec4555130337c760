/** What `npm run audit` concludes from `npm audit --json`, and the exit code it leaves with. */
export type AuditVerdict =
  | { kind: 'clean'; exitCode: 0; message: string }
  | { kind: 'vulnerable'; exitCode: 1; message: string }
  | { kind: 'unreachable'; exitCode: 3; message: string };

/** The severities that fail the check: the release step's `--audit-level=high`. */
const FAILING = ['high', 'critical'] as const;

interface AuditReport {
  metadata?: { vulnerabilities?: Record<string, number> };
  vulnerabilities?: Record<string, { severity?: string }>;
  message?: string;
  error?: { summary?: string };
  statusCode?: number;
  code?: string;
}

/**
 * Reads npm's JSON answer. A report (`metadata.vulnerabilities`) is a verdict; anything else means the
 * advisory service could not be asked (offline, a proxy, a registry mirror without the bulk advisory
 * endpoint), which is not a pass: it says so and exits 3, so a release cannot mistake it for clean.
 */
export function auditVerdict(stdout: string): AuditVerdict {
  let report: AuditReport;
  try {
    report = JSON.parse(stdout) as AuditReport;
  } catch {
    return unreachable('npm audit printed no JSON report');
  }
  const counts = report.metadata?.vulnerabilities;
  if (!counts) {
    const reason = report.message ?? report.error?.summary ?? report.code ?? 'no report';
    return unreachable(reason.split('\n')[0] ?? reason);
  }
  const failing = FAILING.reduce((sum, severity) => sum + (counts[severity] ?? 0), 0);
  const total = counts.total ?? 0;
  if (failing === 0) {
    return {
      kind: 'clean',
      exitCode: 0,
      message: `npm audit: no high or critical advisory in the runtime dependencies (${total} lower)`,
    };
  }
  const names = Object.entries(report.vulnerabilities ?? {})
    .filter(([, v]) => (FAILING as readonly string[]).includes(v.severity ?? ''))
    .map(([name, v]) => `${name} (${v.severity})`)
    .sort();
  return {
    kind: 'vulnerable',
    exitCode: 1,
    message: `npm audit: ${failing} high or critical advisories in the runtime dependencies: ${names.join(', ')}; run npm audit for the fixes`,
  };
}

function unreachable(reason: string): AuditVerdict {
  return {
    kind: 'unreachable',
    exitCode: 3,
    message: `npm audit could not reach the registry's advisory service (${reason}): dependencies NOT checked; run it where the registry is reachable`,
  };
}
