// Placeholder: being written (graphs view).
export function GraphsView() {
  return <p>Graphs</p>;
}
export function GraphView({ id }: { id: string }) {
  return <p>Graph {id}</p>;
}
