import type { Sink } from '../core/sink.js';

/**
 * A sink whose implementation, and the client library it brings in (a database driver, a broker
 * client, DuckDB's engine), is loaded when the sink is first used rather than when the service
 * starts: a process keeps in memory only the libraries of the sinks it runs. A sink that
 * `writesTables` can look at them (`inspectTargets`) and be read back (`comparison`), which the runtime must know before loading it.
 */
export function lazySink(load: () => Promise<Sink>, options: { writesTables?: boolean } = {}): Sink {
  let sink: Sink | undefined;
  let loading: Promise<Sink> | undefined;
  const loaded = () => {
    loading ??= load().then((s) => {
      sink = s;
      return s;
    });
    return loading;
  };
  const inspect: Pick<Sink, 'inspectTargets' | 'comparison'> = options.writesTables
    ? {
        inspectTargets: async (tables) => {
          const loadedSink = await loaded();
          if (!loadedSink.inspectTargets) throw new Error('the sink cannot look at its tables');
          return loadedSink.inspectTargets(tables);
        },
        comparison: async () => {
          const loadedSink = await loaded();
          if (!loadedSink.comparison) throw new Error('the sink cannot be read back');
          return loadedSink.comparison();
        },
      }
    : {};
  return {
    ...inspect,
    open: async (tables) => (await loaded()).open(tables),
    readCheckpoint: async () => (await loaded()).readCheckpoint(),
    snapshotPartitionsDone: async () => (await loaded()).snapshotPartitionsDone(),
    resetTable: async (table) => (await loaded()).resetTable(table),
    writeSnapshotPartition: async (table, partition, copyText, format) =>
      (await loaded()).writeSnapshotPartition(table, partition, copyText, format),
    // Asked of an open sink, so loaded; text until it is.
    snapshotCopyFormat: (table) => sink?.snapshotCopyFormat?.(table) ?? 'text',
    finishSnapshot: async (table) => (await loaded()).finishSnapshot(table),
    planSchemaChange: (current, changes) => {
      // Asked of a sink that streams, so opened: its implementation is there.
      if (!sink) throw new Error('the sink is not open');
      return sink.planSchemaChange(current, changes);
    },
    applySchemaChange: async (proposed, statements) =>
      (await loaded()).applySchemaChange(proposed, statements),
    applyBatch: async (batch) => (await loaded()).applyBatch(batch),
    // Nothing to close when it was never loaded (or could not be).
    close: async () => {
      const opened = await loading?.catch(() => undefined);
      await opened?.close();
    },
  };
}
