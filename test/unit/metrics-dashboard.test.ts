import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createServiceMetrics } from '../../src/metrics/metrics-registry.js';

const dashboard = JSON.parse(readFileSync('docs/grafana-dashboard.json', 'utf8'));

describe('the sample Grafana dashboard', () => {
  it('has a Prometheus data source variable that every panel uses', () => {
    const variable = dashboard.templating.list.find((v: { type: string }) => v.type === 'datasource');
    expect(variable).toMatchObject({ name: 'datasource', query: 'prometheus' });
    for (const panel of dashboard.panels) {
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: `$\{${variable.name}}` });
    }
  });

  it('queries only metrics the service exposes', () => {
    const { registry } = createServiceMetrics(() => []);
    const queries: string[] = dashboard.panels.flatMap((p: { targets: { expr: string }[] }) =>
      p.targets.map((t) => t.expr),
    );
    const names = new Set(queries.flatMap((q) => q.match(/\b(replicator|http)_[a-z_]+/g) ?? []));
    expect(names.size).toBeGreaterThan(5);
    for (const name of names) {
      const metric = name.replace(/_(bucket|sum|count)$/, '');
      expect(registry.getSingleMetric(metric), name).toBeDefined();
    }
  });
});
