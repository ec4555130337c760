import type { DatabasePool } from 'slonik';
import type { LiveHub } from '../live/live-hub.js';
import type { Logger } from '../log/logger.js';
import type { VerificationMetrics } from '../metrics/verification-metrics.js';
import { verificationsStore } from '../store/verifications-store.js';
import { toVerificationView } from './verification-view.js';
import type { VerificationEvents } from './verification-worker.js';

/** Verifications as the live feed and the metrics tell them. */
export function verificationEvents(
  pool: DatabasePool,
  live: LiveHub,
  metrics: VerificationMetrics,
  logger: Logger,
): VerificationEvents {
  return {
    started: (pipeline) => metrics.started(pipeline.name),
    rowsRead: (pipeline, rows) => metrics.read(pipeline.name, rows),
    ended: (pipeline, end) => metrics.ended(pipeline.name, end),
    changed: (pipeline, id) => {
      if (!live.watched(pipeline.projectId)) return;
      verificationsStore
        .find(pool, pipeline.id, id)
        .then((row) => {
          if (row) {
            live.publish(pipeline.projectId, {
              type: 'pipeline.verification',
              name: pipeline.name,
              verification: toVerificationView(row, pipeline.name),
            });
          }
        })
        .catch((error: unknown) =>
          logger.warn({ err: error }, 'a verification was not sent to the live feed'),
        );
    },
  };
}
