/**
 * The diagram of the pipeline machine: its graph read from `machines/pipeline.ts` and laid out
 * once by ELK in a Web Worker. With Vite's dev server an edit of the machine replaces this
 * module (it imports the machine), so the diagram is rebuilt from the new definition.
 */
import ElkConstructor from 'elkjs/lib/elk-api.js';
import elkWorkerUrl from 'elkjs/lib/elk-worker.min.js?url';
import { pipelineMachine } from '../../../machines/pipeline';
import { type MachineGraph, machineGraph } from './machine-graph';
import { layoutMachine, type MachineLayout } from './machine-layout';

export const pipelineGraph: MachineGraph = machineGraph(pipelineMachine);

let layout: Promise<MachineLayout> | undefined;

/** The laid-out diagram (computed on first use, then shared). */
export function pipelineLayout(): Promise<MachineLayout> {
  if (!layout) {
    const elk = new ElkConstructor({ workerUrl: elkWorkerUrl });
    layout = layoutMachine(pipelineGraph, elk).finally(() => elk.terminateWorker());
    layout.catch(() => {
      layout = undefined;
    });
  }
  return layout;
}

/**
 * The state nodes a pipeline is in: the top-level state the API shows and, inside it, the node
 * named after the live phase (`snapshot`, `streaming`), with every node between.
 */
export function activeNodeIds(graph: MachineGraph, state: string | null, phase: string | null): Set<string> {
  const active = new Set<string>();
  if (!state) return active;
  const top = [...graph.nodes.values()].find((n) => n.path.length === 1 && n.path[0] === state);
  if (!top) return active;
  active.add(top.id);
  if (!phase) return active;
  const inner = [...graph.nodes.values()].find(
    (n) => n.kind !== 'initial' && n.path[0] === state && n.path.at(-1) === phase,
  );
  for (
    let node = inner;
    node && node.id !== top.id;
    node = node.parent ? graph.nodes.get(node.parent) : undefined
  ) {
    active.add(node.id);
  }
  return active;
}
