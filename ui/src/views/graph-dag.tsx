/**
 * A Task Graph v1 graph drawn as a DAG: `@dagrejs/dagre` computes the layout (ranks top to bottom,
 * dependencies pointing at their dependents), Preact renders it as SVG. Each node is a focusable
 * link with an aria-label naming the subtask, its state and whether it is in the planned wave or
 * deferred; a table beside it carries the same facts for readers that skip the drawing.
 */
import dagre from '@dagrejs/dagre';

export interface DagNode {
  id: string;
  title: string;
  state: string;
  /** `wave` (planned to run now), `conflict` (deferred by a write-intent conflict), `capacity` (deferred by maxConcurrency). */
  plan?: 'wave' | 'conflict' | 'capacity';
  dependsOn: string[];
  /** Where activating the node goes (defaults to nothing). */
  link?: string;
}

const W = 170;
const H = 54;

export function Dag({ nodes, label }: { nodes: DagNode[]; label: string }) {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: 'TB', nodesep: 28, ranksep: 46, marginx: 12, marginy: 12 });
  g.setDefaultEdgeLabel(() => ({}));
  const ids = new Set(nodes.map((n) => n.id));
  for (const n of nodes) g.setNode(n.id, { width: W, height: H });
  for (const n of nodes) for (const d of n.dependsOn) if (ids.has(d)) g.setEdge(d, n.id);
  dagre.layout(g);
  const size = g.graph() as { width?: number; height?: number };
  const width = Math.max(size.width ?? W, W);
  const height = Math.max(size.height ?? H, H);
  return (
    <svg class="graph-dag" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="group" aria-label={label}>
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" class="graph-arrow" />
        </marker>
      </defs>
      {g.edges().map((e) => {
        const pts = (g.edge(e) as { points: { x: number; y: number }[] }).points;
        const d = pts.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
        return <path key={`${e.v}->${e.w}`} d={d} class="graph-edge" marker-end="url(#arrow)" />;
      })}
      {nodes.map((n) => {
        const p = g.node(n.id) as { x: number; y: number };
        const x = p.x - W / 2;
        const y = p.y - H / 2;
        const planText =
          n.plan === 'wave'
            ? 'in the planned wave'
            : n.plan === 'conflict'
              ? 'deferred: write-intent conflict'
              : n.plan === 'capacity'
                ? 'deferred: capacity'
                : '';
        const body = (
          <g class={`graph-node state-${n.state} ${n.plan ? `plan-${n.plan}` : ''}`}>
            <title>{`${n.id}: ${n.title}`}</title>
            <rect x={x} y={y} width={W} height={H} rx={6} />
            <text x={x + 8} y={y + 18} class="graph-id">
              {n.id.length > 20 ? `${n.id.slice(0, 19)}…` : n.id}
            </text>
            <text x={x + 8} y={y + 34} class="graph-state">
              {n.state}
            </text>
            {n.plan && (
              <text x={x + 8} y={y + 48} class="graph-plan">
                {n.plan === 'wave' ? 'wave' : n.plan === 'conflict' ? 'deferred: conflict' : 'deferred: capacity'}
              </text>
            )}
          </g>
        );
        return n.link ? (
          <a key={n.id} href={n.link} aria-label={`${n.id}, ${n.state}${planText ? `, ${planText}` : ''}`}>
            {body}
          </a>
        ) : (
          <g key={n.id}>{body}</g>
        );
      })}
    </svg>
  );
}
