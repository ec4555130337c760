/**
 * The pipeline machine as a graph, read from the machine definition itself
 * (`machines/pipeline.ts`): its state nodes, nested as in the machine, and every transition
 * (events, user actions, guarded branches, `always`, delays, invoked actors' done and error).
 * Nothing here is written by hand, so the diagram follows every edit of the machine.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition } from 'xstate';
import type { PipelineAction } from '../../../machines/pipeline';
import { ACTION_EVENTS } from '../../../machines/pipeline-transitions';

export type EdgeKind = 'action' | 'decision' | 'event' | 'always' | 'done' | 'error' | 'after' | 'initial';

export interface MachineNode {
  /** The state node's id, e.g. `pipeline.running.replicating`. */
  id: string;
  /** Its key, e.g. `replicating`. */
  label: string;
  /** Null for the machine's root. */
  parent: string | null;
  /** Children ids, in definition order. */
  children: string[];
  /** `initial` pseudo-states are drawn as a dot with an edge to the initial child. */
  kind: 'state' | 'compound' | 'final' | 'initial';
  /** Actors the state invokes, e.g. `prepare`. */
  invokes: string[];
  /** Events handled without leaving the state (actions only), e.g. `PROGRESS`. */
  internal: string[];
  /** The path of keys from the root, e.g. ['running', 'replicating']. */
  path: string[];
}

export interface MachineEdge {
  id: string;
  source: string;
  target: string;
  kind: EdgeKind;
  /** What triggers it, as shown: `start`, `FAILED [canRetry]`, `done: drain`, `after backoff`. */
  label: string;
  /** The event type as the machine knows it. */
  eventType: string;
  /** Set for the actions a person requests through the API. */
  action?: PipelineAction;
  /** The guard, as far as the definition names it (the function's text for an inline one). */
  guard?: string;
}

export interface MachineGraph {
  rootId: string;
  nodes: Map<string, MachineNode>;
  edges: MachineEdge[];
}

const ACTION_OF_EVENT = new Map<string, PipelineAction>(
  Object.entries(ACTION_EVENTS).map(([action, event]) => [event.type, action as PipelineAction]),
);

/** Events a person sends through the schema review, not the state endpoint. */
const DECISIONS = new Set(['APPROVE', 'REJECT']);

export const initialNodeId = (parentId: string) => `${parentId}.__initial`;

/** Reads the graph of `machine`. */
export function machineGraph(machine: AnyStateMachine): MachineGraph {
  const nodes = new Map<string, MachineNode>();
  const edges: MachineEdge[] = [];
  const addEdge = (edge: Omit<MachineEdge, 'id'>) => edges.push({ ...edge, id: `e${edges.length}` });

  const visit = (node: AnyStateNode, parent: string | null) => {
    const children = Object.values(node.states) as AnyStateNode[];
    const entry: MachineNode = {
      id: node.id,
      label: parent === null ? (machine.id ?? node.key) : node.key,
      parent,
      children: [],
      kind: children.length > 0 ? 'compound' : node.type === 'final' ? 'final' : 'state',
      invokes: node.invoke.map((invoke: { src: unknown }) => actorName(invoke.src)),
      internal: [],
      path: node.path,
    };
    nodes.set(node.id, entry);

    const initialTargets = (node.initial?.target ?? []) as readonly AnyStateNode[];
    if (children.length > 0 && initialTargets.length > 0) {
      const dot = initialNodeId(node.id);
      nodes.set(dot, {
        id: dot,
        label: 'initial',
        parent: node.id,
        children: [],
        kind: 'initial',
        invokes: [],
        internal: [],
        path: [...node.path, '(initial)'],
      });
      entry.children.push(dot);
      for (const target of initialTargets) {
        addEdge({ source: dot, target: target.id, kind: 'initial', label: '', eventType: '' });
      }
    }

    for (const [eventType, transitions] of node.transitions as Map<string, AnyTransitionDefinition[]>) {
      transitions.forEach((transition, index) => {
        const guard = guardText(transition.guard);
        const elseBranch = guard === undefined && index > 0;
        if (!transition.target || transition.target.length === 0) {
          entry.internal.push(eventType);
          return;
        }
        for (const target of transition.target as readonly AnyStateNode[]) {
          const described = describeEvent(node, eventType);
          const condition =
            guard !== undefined ? ` [${guardName(transition.guard)}]` : elseBranch ? ' [else]' : '';
          const edge: Omit<MachineEdge, 'id'> = {
            source: node.id,
            target: target.id,
            kind: described.kind,
            label: `${described.label}${condition}${transition.reenter ? ' (re-enter)' : ''}`,
            eventType,
          };
          if (described.action) edge.action = described.action;
          if (guard !== undefined) edge.guard = guard;
          addEdge(edge);
        }
      });
    }

    const always = (node.always ?? []) as AnyTransitionDefinition[];
    always.forEach((transition, index) => {
      const guard = guardText(transition.guard);
      for (const target of (transition.target ?? []) as readonly AnyStateNode[]) {
        const condition =
          guard !== undefined ? ` [${guardName(transition.guard)}]` : index > 0 ? ' [else]' : '';
        const edge: Omit<MachineEdge, 'id'> = {
          source: node.id,
          target: target.id,
          kind: 'always',
          label: `always${condition}`,
          eventType: '',
        };
        if (guard !== undefined) edge.guard = guard;
        addEdge(edge);
      }
    });

    for (const child of children) {
      entry.children.push(child.id);
      visit(child, node.id);
    }
  };

  visit(machine.root, null);
  return { rootId: machine.root.id, nodes, edges };
}

function describeEvent(
  node: AnyStateNode,
  eventType: string,
): { kind: EdgeKind; label: string; action?: PipelineAction } {
  const action = ACTION_OF_EVENT.get(eventType);
  if (action) return { kind: 'action', label: action, action };
  if (DECISIONS.has(eventType)) return { kind: 'decision', label: eventType.toLowerCase() };
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) {
    const invoke = node.invoke.find((i: { id: string }) => i.id === actor[2]);
    const name = invoke ? actorName(invoke.src) : actor[2];
    return { kind: actor[1] === 'done' ? 'done' : 'error', label: `${actor[1]}: ${name}` };
  }
  const after = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (after) return { kind: 'after', label: `after ${after[1]}` };
  return { kind: 'event', label: eventType };
}

function actorName(src: unknown): string {
  if (typeof src === 'string') return src;
  if (typeof src === 'object' && src !== null && 'id' in src) return String((src as { id: unknown }).id);
  return 'actor';
}

/** A named guard's name; an inline one's condition, shortened from its source text. */
function guardName(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && guard !== null && 'type' in guard) return String(guard.type);
  if (typeof guard === 'function') return conditionOf(guard.toString());
  return 'guarded';
}

/** `({ context }) => context.resumeAs === 'running'` → `resumeAs === 'running'`. */
export function conditionOf(source: string): string {
  const arrow = source.indexOf('=>');
  if (arrow < 0) return 'guarded';
  const text = source
    .slice(arrow + 2)
    .trim()
    .replace(/^\{\s*return\s+/, '')
    .replace(/;?\s*\}$/, '')
    .replace(/\s+/g, ' ')
    // The arguments' names (`context.`, `event.`, or a minifier's one or two letters).
    .replace(/(^|[^\w$.])(?:context|event|[A-Za-z_$][\w$]?)\./g, '$1')
    // A build may write 'x' as `x`, and drop the spaces around operators.
    .replace(/`([^`$]*)`/g, "'$1'")
    .replace(/\s*(===|!==|&&|\|\||<=|>=)\s*/g, ' $1 ');
  return text.length > 48 ? `${text.slice(0, 47)}…` : text;
}

function guardText(guard: unknown): string | undefined {
  if (guard === undefined || guard === null) return undefined;
  if (typeof guard === 'function') return guard.toString();
  return guardName(guard);
}
