import { parseShellScript } from "../safety/shell-words.ts";

const HEREDOC_INVOCATION = /^\s*(?:apply_patch|applypatch)\s+<</;

/**
 * The patch in a shell command that invokes apply_patch, as models trained on Codex write it
 * (`apply_patch <<'EOF' … EOF`, or `apply_patch '<patch>'`); null for any other command.
 * No such program exists in the workspace, so the execute tool applies the patch itself.
 */
export function patchFromCommand(command: string): string | null {
  if (HEREDOC_INVOCATION.test(command)) return command.trim();
  const script = parseShellScript(command);
  if (script.unsupported.length > 0 || script.commands.length !== 1) return null;
  const [only] = script.commands;
  const [program, patch, ...rest] = only!.words;
  if (program?.text !== "apply_patch" && program?.text !== "applypatch") return null;
  if (patch === undefined || rest.length > 0 || patch.expands || patch.substitutes) return null;
  if (only!.redirections.length > 0 || only!.assignments.length > 0) return null;
  return patch.text;
}
