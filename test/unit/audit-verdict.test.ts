import { describe, expect, it } from 'vitest';
import { auditVerdict } from '../../scripts/audit-verdict.js';

/** An npm audit report (auditReportVersion 2) with the given counts by severity. */
const report = (counts: Record<string, number>, vulnerabilities: Record<string, { severity: string }> = {}) =>
  JSON.stringify({
    auditReportVersion: 2,
    vulnerabilities,
    metadata: {
      vulnerabilities: { info: 0, low: 0, moderate: 0, high: 0, critical: 0, ...counts },
    },
  });

describe('npm run audit verdict', () => {
  it('passes a report without high or critical advisories', () => {
    const verdict = auditVerdict(report({ moderate: 2, total: 2 }, { a: { severity: 'moderate' } }));
    expect(verdict).toMatchObject({ kind: 'clean', exitCode: 0 });
    expect(verdict.message).toContain('2 lower');
  });

  it('fails on a high or critical advisory, naming the packages', () => {
    const verdict = auditVerdict(
      report(
        { high: 1, critical: 1, low: 1, total: 3 },
        { fastify: { severity: 'high' }, pg: { severity: 'critical' }, ms: { severity: 'low' } },
      ),
    );
    expect(verdict).toMatchObject({ kind: 'vulnerable', exitCode: 1 });
    expect(verdict.message).toContain('fastify (high), pg (critical)');
    expect(verdict.message).not.toContain('ms (low)');
  });

  it('says the dependencies were not checked when the advisory endpoint answers an error', () => {
    const verdict = auditVerdict(
      JSON.stringify({
        message: '405 Method Not Allowed - POST https://registry.npmjs.org/-/npm/v1/security/advisories/bulk',
        statusCode: 405,
        error: { summary: '', detail: '' },
      }),
    );
    expect(verdict).toMatchObject({ kind: 'unreachable', exitCode: 3 });
    expect(verdict.message).toContain('405 Method Not Allowed');
    expect(verdict.message).toContain('NOT checked');
  });

  it('says so too when npm printed nothing (offline, killed by the time limit)', () => {
    expect(auditVerdict('')).toMatchObject({ kind: 'unreachable', exitCode: 3 });
    expect(auditVerdict(JSON.stringify({ code: 'ENOTFOUND' })).message).toContain('ENOTFOUND');
  });
});
