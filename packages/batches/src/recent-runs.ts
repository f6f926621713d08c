// What a process keeps per batch run (its parsed spec, the images its steps found) for the runs it
// saw most recently: a run's workspaces share them, and an old run's are dropped.

/** How many runs' image look-ups and parsed specs a process keeps. */
export const RUNS_KEPT = 8;

/** Keeps `value` for the run, and only the RUNS_KEPT runs seen most recently. */
export function keepRecent<Value>(byRun: Map<string, Value>, runId: string, value: Value): void {
  // Set again at the end, so the run counts as seen most recently.
  byRun.delete(runId);
  byRun.set(runId, value);
  // Maps keep insertion order: the first key is the run seen longest ago.
  if (byRun.size > RUNS_KEPT) byRun.delete(byRun.keys().next().value!);
}
