import type { BatchRunStats } from "@deckhand/wire";

const FIELDS: readonly { key: keyof BatchRunStats; label: string }[] = [
  { key: "workspaces", label: "workspaces" },
  { key: "pending", label: "pending" },
  { key: "running", label: "running" },
  { key: "completed", label: "completed" },
  { key: "failed", label: "failed" },
  { key: "cancelled", label: "cancelled" },
  { key: "changesets", label: "changesets" },
  { key: "steps_run", label: "steps run" },
  { key: "steps_cached", label: "steps cached" },
];

/** A run's counts, as the CLI summary shows them. */
export function StatsBar({ stats }: { stats: BatchRunStats }) {
  return (
    <dl className="stats-bar" aria-label="Run stats">
      {FIELDS.map((field) => (
        <div key={field.key} data-field={field.key}>
          <dt>{field.label}</dt>
          <dd>{stats[field.key]}</dd>
        </div>
      ))}
    </dl>
  );
}
