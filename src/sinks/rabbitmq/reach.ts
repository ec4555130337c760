import { type ReachCheck, reached, unreached, within } from '../../connections/reach-check.js';
import { Broker } from './broker.js';
import type { RabbitmqSettings } from './rabbitmq-connection-type.js';

/** A RabbitMQ broker: connected to (its login included) and closed again. */
export async function reachRabbitmq(settings: RabbitmqSettings, timeoutMs: number): Promise<ReachCheck[]> {
  let broker: Broker;
  try {
    broker = await within(
      Broker.connect({ ...settings, socket: { ...settings.socket, timeout: timeoutMs } }),
      timeoutMs,
      'RabbitMQ',
    );
  } catch (error) {
    return [unreached(`RabbitMQ at ${settings.endpoint}`, error)];
  }
  await broker.close().catch(() => undefined);
  return [reached(`RabbitMQ at ${settings.endpoint}`)];
}
