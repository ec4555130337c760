import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { defineConfig } from 'vitepress';

// The documentation site: `npm run docs:dev` serves it, `npm run docs:build` builds it into
// docs/.vitepress/dist and fails on a link to a page that does not exist.
export default defineConfig({
  title: 'Replicator',
  description: 'Replicates a PostgreSQL source into sinks through logical replication, driven by a REST API.',
  cleanUrls: true,
  lastUpdated: false,
  // The sample Grafana dashboard stays at docs/grafana-dashboard.json; the Prometheus page links it.
  async buildEnd(site) {
    await copyFile(join(site.srcDir, 'grafana-dashboard.json'), join(site.outDir, 'grafana-dashboard.json'));
  },
  themeConfig: {
    search: { provider: 'local' },
    outline: [2, 3],
    nav: [
      { text: 'Getting started', link: '/getting-started' },
      { text: 'API', link: '/api/' },
      { text: 'Sinks', link: '/sinks/' },
    ],
    sidebar: [
      {
        text: 'Introduction',
        items: [
          { text: 'Replicator', link: '/' },
          { text: 'Getting started', link: '/getting-started' },
          { text: 'Command line', link: '/cli' },
          { text: 'Configuration', link: '/configuration' },
          { text: 'How replication works', link: '/how-it-works' },
        ],
      },
      {
        text: 'API',
        items: [
          { text: 'Overview', link: '/api/' },
          { text: 'Errors', link: '/api/errors' },
          { text: 'Apply', link: '/api/apply' },
          { text: 'Connections', link: '/api/connections' },
          { text: 'Pipelines', link: '/api/pipelines' },
          { text: 'Metrics, progress and runs', link: '/api/metrics' },
        ],
      },
      {
        text: 'Operations',
        items: [
          { text: 'Health, fleet and slot safety', link: '/operations/health' },
          { text: 'Shared source streams', link: '/operations/shared-streams' },
          { text: 'Resync and table changes', link: '/operations/resync' },
          { text: 'Verify and repair', link: '/operations/verify-and-repair' },
          { text: 'Schema review', link: '/operations/schema-review' },
          { text: 'Prometheus metrics', link: '/operations/prometheus' },
        ],
      },
      {
        text: 'Sinks',
        items: [
          { text: 'Sink properties', link: '/sinks/' },
          { text: 'PostgreSQL', link: '/sinks/postgres' },
          { text: 'MySQL and MariaDB', link: '/sinks/mysql' },
          { text: 'DuckDB', link: '/sinks/duckdb' },
          { text: 'Redis Streams', link: '/sinks/redis' },
          { text: 'NATS JetStream', link: '/sinks/nats' },
          { text: 'RabbitMQ', link: '/sinks/rabbitmq' },
          { text: 'Webhook', link: '/sinks/webhook' },
          { text: 'The change envelope', link: '/sinks/change-envelope' },
        ],
      },
      {
        text: 'Users and access',
        items: [
          { text: 'Tenancy and authentication', link: '/tenancy-and-auth' },
          { text: 'Dashboard', link: '/dashboard' },
          { text: 'Dashboard pages', link: '/dashboard-pages' },
        ],
      },
      {
        text: 'Project',
        items: [
          { text: 'Development', link: '/development' },
          { text: 'Dependencies', link: '/dependencies' },
          { text: 'Security', link: '/security' },
          { text: 'Reliability', link: '/reliability' },
          { text: 'Benchmarks', link: '/benchmarks' },
        ],
      },
    ],
  },
});
