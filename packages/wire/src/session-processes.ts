import { z } from "zod";
import { ProcessInfoSchema, ProcessSignalNameSchema } from "./process-api.ts";

/**
 * A session's processes (`/api/sessions/:session_id/processes...`): what its agents started
 * through the workspace agent, seen from the browser. The shapes are the process API's own, so
 * a process reads the same whether an agent or a person asks; only the session scoping is added.
 */

/** The longest a `wait=true` output read blocks here: short enough for browsers and proxies. */
export const SESSION_PROCESS_WAIT_CAP_MS = 30_000;

/** `GET /api/sessions/:session_id/processes`: the processes of the session's chats, newest first. */
export const SessionProcessListSchema = z.object({ processes: z.array(ProcessInfoSchema) });
export type SessionProcessList = z.infer<typeof SessionProcessListSchema>;

/** `GET /api/sessions/:session_id/processes/:process_id/output`. */
export const SessionProcessOutputQuerySchema = z.strictObject({
  /** A `next_cursor` from an earlier read: answer only what came after it. */
  cursor: z.coerce.number().int().min(0).optional(),
  /**
   * `true` blocks until there is output after `cursor` (or, without a cursor, until the process
   * exits), at most `timeout_ms`; the answer then says `timed_out: true`.
   */
  wait: z
    .enum(["true", "false"])
    .transform((value) => value === "true")
    .optional(),
  /** How long a wait may block; at most `SESSION_PROCESS_WAIT_CAP_MS`, which is also the default. */
  timeout_ms: z.coerce.number().int().min(0).max(SESSION_PROCESS_WAIT_CAP_MS).optional(),
});
export type SessionProcessOutputQuery = z.infer<typeof SessionProcessOutputQuerySchema>;

/** `POST /api/sessions/:session_id/processes/:process_id/signal`. */
export const SessionProcessSignalRequestSchema = z.strictObject({
  signal: ProcessSignalNameSchema,
});
export type SessionProcessSignalRequest = z.infer<typeof SessionProcessSignalRequestSchema>;

/** The POSIX name each signal the API sends goes by, for people: buttons, docs. */
export const PROCESS_SIGNAL_POSIX_NAMES = {
  interrupt: "SIGINT",
  terminate: "SIGTERM",
  kill: "SIGKILL",
} as const satisfies Record<z.infer<typeof ProcessSignalNameSchema>, string>;
