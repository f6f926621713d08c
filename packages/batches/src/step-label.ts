// A step's name for people: what it runs, as the spec wrote it. The run screen's table, the
// step API and a taken-over workspace's context name steps by it, numbered from 0 as the API.
import { z } from "zod";

/** The steps of a stored (canonical) spec, as far as naming them needs. */
export const StoredStepKindsSchema = z.object({
  steps: z.array(
    z.object({
      run: z.string().optional(),
      codingAgent: z.object({ type: z.string(), prompt: z.string().optional() }).optional(),
    }),
  ),
});
export type StoredStepKinds = z.infer<typeof StoredStepKindsSchema>;

/** How long a step's label may be: a table cell's worth. */
const STEP_LABEL_LENGTH = 80;

/**
 * A step's name for people, as the spec wrote it: its command's first line, or the coding agent
 * and its prompt's first line; shortened with "…" where more was cut.
 */
export function stepLabel(step: StoredStepKinds["steps"][number] | undefined): string {
  const [text, prefix] = step?.codingAgent
    ? [step.codingAgent.prompt ?? "", `codingAgent ${step.codingAgent.type}: `]
    : [step?.run ?? "", ""];
  const lines = text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
  const first = lines[0] ?? "";
  const room = STEP_LABEL_LENGTH - prefix.length;
  const cut = first.length > room || lines.length > 1;
  return `${prefix}${first.slice(0, cut ? room - 1 : room).trimEnd()}${cut ? "…" : ""}`.trim();
}
