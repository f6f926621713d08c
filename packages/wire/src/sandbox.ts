import { z } from "zod";

/**
 * What confined an agent-facing process: `bubblewrap` (its own PID namespace, a filesystem view
 * where only its worktree or workspace is writable, the network its profile allows) or `none`
 * (only the environment policy; see docs/operations/security.md).
 */
export const SandboxKindSchema = z.enum(["bubblewrap", "none"]);
export type SandboxKind = z.infer<typeof SandboxKindSchema>;

/** How this server confines agents, their commands and local steps; in the providers snapshot. */
export const SandboxStatusSchema = z.object({
  kind: SandboxKindSchema,
  /** Why processes run unconfined; null when they are sandboxed. */
  reason: z.string().nullable(),
});
export type SandboxStatus = z.infer<typeof SandboxStatusSchema>;
