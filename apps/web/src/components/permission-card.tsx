import type { PermissionOptionKind } from "@deckhand/wire";
import { useEffect } from "react";
import type { PendingPermission } from "../session/session-model.ts";

/** Keys for the four kinds an agent may offer; only the options it offered are bound. */
const SHORTCUTS: Record<PermissionOptionKind, string> = {
  allow_once: "y",
  allow_always: "a",
  reject_once: "n",
  reject_always: "r",
};

/**
 * A permission request built from the agent's own options (their names as the agent wrote
 * them), answerable with a click or its key while no text field has focus.
 */
export function PermissionCard({
  permission,
  onAnswer,
  shortcuts,
}: {
  permission: PendingPermission;
  onAnswer: (kind: PermissionOptionKind) => void;
  /** Only the oldest open request listens for keys, so one key press answers one request. */
  shortcuts: boolean;
}) {
  useEffect(() => {
    if (!shortcuts) return;
    const onKey = (event: KeyboardEvent) => {
      const target = event.target as HTMLElement | null;
      if (target?.closest("input, textarea, select, [contenteditable]")) return;
      if (event.ctrlKey || event.metaKey || event.altKey) return;
      const option = permission.options.find(
        (candidate) => SHORTCUTS[candidate.kind] === event.key.toLowerCase(),
      );
      if (!option) return;
      event.preventDefault();
      onAnswer(option.kind);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [permission, onAnswer, shortcuts]);
  return (
    <section className="card permission" aria-label={`Permission requested: ${permission.title}`}>
      <header className="card-header">
        <strong>{permission.agent || "The agent"} asks permission</strong>
      </header>
      <p>{permission.title}</p>
      <div className="actions">
        {permission.options.map((option) => (
          <button
            key={option.option_id}
            type="button"
            className={option.kind.startsWith("allow") ? "primary" : "danger"}
            onClick={() => onAnswer(option.kind)}
            aria-keyshortcuts={SHORTCUTS[option.kind]}
          >
            {option.name} <kbd>{SHORTCUTS[option.kind]}</kbd>
          </button>
        ))}
      </div>
    </section>
  );
}
