/**
 * Lays out a machine graph with ELK (layered, nested states inside their parents) and returns
 * absolute coordinates for drawing it as SVG.
 */
import type { ElkExtendedEdge, ElkLabel, ElkNode, ElkPoint } from 'elkjs/lib/elk-api';
import type { EdgeKind, MachineEdge, MachineGraph, MachineNode } from './machine-graph';

/** What ELK offers (elkjs' `ELK` class, with or without a Web Worker). */
export interface ElkLayouter {
  layout(graph: ElkNode): Promise<ElkNode>;
}

export interface PlacedNode {
  node: MachineNode;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedEdge {
  edge: MachineEdge;
  kind: EdgeKind;
  /** The polyline from source to target. */
  points: ElkPoint[];
  label: { text: string; x: number; y: number; width: number; height: number } | null;
}

export interface MachineLayout {
  width: number;
  height: number;
  nodes: PlacedNode[];
  edges: PlacedEdge[];
}

/** Text metrics of the diagram's font (12 px system sans-serif), close enough for layout. */
const CHAR_WIDTH = 7;
const LINE_HEIGHT = 16;
const LABEL_FONT_WIDTH = 6.4;
const INITIAL_SIZE = 12;

const ROOT_OPTIONS: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.direction': 'DOWN',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.json.shapeCoords': 'ROOT',
  'elk.json.edgeCoords': 'ROOT',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.spacing.nodeNode': '28',
  'elk.layered.spacing.nodeNodeBetweenLayers': '36',
  'elk.spacing.edgeLabel': '3',
  'elk.spacing.edgeNode': '14',
  'elk.spacing.edgeEdge': '10',
  'elk.layered.spacing.edgeNodeBetweenLayers': '14',
  // States in the order the machine defines them (restoring, stopped, starting, running, ...): the
  // diagram reads top-down as the definition does, and cycles are broken against that order.
  'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
  'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
  'elk.layered.nodePlacement.strategy': 'LINEAR_SEGMENTS',
  'elk.padding': '[top=12,left=12,bottom=12,right=12]',
};

const COMPOUND_OPTIONS: Record<string, string> = {
  'elk.padding': `[top=${LINE_HEIGHT * 2 + 6},left=14,bottom=14,right=14]`,
  'elk.nodeLabels.placement': '[H_LEFT, V_TOP, INSIDE]',
};

/** The lines of text a state box shows: its name, then the actors it invokes. */
export function nodeLines(node: MachineNode): string[] {
  return [node.label, ...node.invokes.map((src) => `invoke ${src}`)];
}

function textWidth(lines: string[], charWidth = CHAR_WIDTH): number {
  return Math.max(...lines.map((line) => line.length)) * charWidth;
}

export async function layoutMachine(graph: MachineGraph, elk: ElkLayouter): Promise<MachineLayout> {
  const toElk = (id: string): ElkNode => {
    const node = graph.nodes.get(id) as MachineNode;
    if (node.kind === 'initial') return { id, width: INITIAL_SIZE, height: INITIAL_SIZE };
    const lines = nodeLines(node);
    if (node.kind === 'compound') {
      return {
        id,
        layoutOptions: COMPOUND_OPTIONS,
        labels: [{ text: node.label, width: textWidth(lines) + 8, height: LINE_HEIGHT * lines.length }],
        children: node.children.map(toElk),
      };
    }
    return { id, width: textWidth(lines) + 28, height: 14 + LINE_HEIGHT * lines.length };
  };

  const root = graph.nodes.get(graph.rootId) as MachineNode;
  const edges: ElkExtendedEdge[] = graph.edges.map((edge) => {
    const labels: ElkLabel[] = edge.label
      ? [{ text: edge.label, width: edge.label.length * LABEL_FONT_WIDTH + 6, height: 14 }]
      : [];
    return { id: edge.id, sources: [edge.source], targets: [edge.target], labels };
  });
  const elkGraph: ElkNode = {
    id: '__diagram',
    layoutOptions: ROOT_OPTIONS,
    // The machine itself is the drawing: its top-level states are the graph's own nodes.
    children: root.children.map(toElk),
    edges,
  };
  const laid = await elk.layout(elkGraph);

  const nodes: PlacedNode[] = [];
  const collect = (n: ElkNode) => {
    const node = graph.nodes.get(n.id);
    if (node) nodes.push({ node, x: n.x ?? 0, y: n.y ?? 0, width: n.width ?? 0, height: n.height ?? 0 });
    for (const child of n.children ?? []) collect(child);
  };
  for (const child of laid.children ?? []) collect(child);

  const byId = new Map(graph.edges.map((edge) => [edge.id, edge]));
  const placedEdges: PlacedEdge[] = [];
  const collectEdges = (n: ElkNode) => {
    for (const e of n.edges ?? []) {
      const edge = byId.get(e.id);
      if (!edge) continue;
      const points = (e.sections ?? []).flatMap((section) => [
        section.startPoint,
        ...(section.bendPoints ?? []),
        section.endPoint,
      ]);
      const label = e.labels?.[0];
      placedEdges.push({
        edge,
        kind: edge.kind,
        points,
        label:
          label && edge.label
            ? {
                text: edge.label,
                x: label.x ?? 0,
                y: label.y ?? 0,
                width: label.width ?? 0,
                height: label.height ?? 0,
              }
            : null,
      });
    }
    for (const child of n.children ?? []) collectEdges(child);
  };
  collectEdges(laid);

  return { width: laid.width ?? 0, height: laid.height ?? 0, nodes, edges: placedEdges };
}
