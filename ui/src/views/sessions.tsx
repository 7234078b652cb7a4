// Placeholder: being written (sessions view).
export function SessionsView() {
  return <p>Sessions</p>;
}
