import type { SinkKind } from '../../core/sink.js';
import { lazySink } from '../lazy-sink.js';
import { parseWebhookSinkProperties, WEBHOOK_SINK_PROPERTIES, type WebhookSinkConfig } from './config.js';
import type { WebhookSettings } from './webhook-connection-type.js';

/** The webhook sink: each batch one signed JSON POST, the checkpoint in the service's store once it is accepted. */
export const webhookSinkKind: SinkKind<WebhookSinkConfig, WebhookSettings> = {
  type: 'webhook',
  properties: WEBHOOK_SINK_PROPERTIES,
  parseProperties: parseWebhookSinkProperties,
  // Its client library is loaded with the first sink of the kind.
  create: (ctx) => lazySink(async () => (await import('./webhook-sink.js')).createWebhookSink(ctx)),
};
