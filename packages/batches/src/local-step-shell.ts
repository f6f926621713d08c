// Which shell runs a step's script on this machine. Containers get bash when the image has it
// (src-cli's choice, see container-step-runner.ts); a local step gets the same, so a script
// written for bash (`IFS=$'\n'`, `[[ … ]]`, arrays, `set -o pipefail`) works on the host as in
// its image instead of failing under dash, Debian's `sh`.
import { resolveExecutable } from "@deckhand/shell";

/**
 * For a `run` script, `bash` as `path` (the PATH steps start from) finds it, else `sh`; for a
 * rendered `codingAgent` script, which is POSIX sh, `sh` (as in a container). The path as found,
 * or plain `sh` when PATH has none; it is what the step result reports as its shell.
 */
export async function localStepShell(
  path: string | undefined,
  script: "run" | "codingAgent",
): Promise<string> {
  const options = path === undefined ? {} : { path };
  const bash = script === "run" ? await resolveExecutable("bash", options) : null;
  return bash ?? (await resolveExecutable("sh", options)) ?? "sh";
}
