// Placeholder: being written (scenarios view).
export function ScenariosView() {
  return <p>Scenarios</p>;
}
export function ScenarioView({ name }: { name: string }) {
  return <p>Scenario {name}</p>;
}
