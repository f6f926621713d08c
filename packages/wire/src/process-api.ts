import { z } from "zod";
import { ProcessLimits } from "./constants.ts";

/** Environment variable names a request may set: POSIX-portable, no `=` or NUL. */
const EnvName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a valid environment variable name");

export const StartProcessRequestSchema = z.strictObject({
  command: z
    .string()
    .refine((command) => command.trim().length > 0, "command must not be empty")
    .refine((command) => !command.includes("\0"), "command must not contain NUL bytes"),
  workdir: z.string().min(1).optional(),
  env: z.record(EnvName, z.string()).optional(),
  background: z.boolean().optional(),
  /**
   * Milliseconds to wait for the process to exit before answering (capped by the server), so a
   * foreground command takes one round trip; the answer then carries `output`. Without it the
   * answer comes as soon as the process has started.
   */
  wait_ms: z.number().int().min(0).optional(),
});
export type StartProcessRequest = z.infer<typeof StartProcessRequestSchema>;

export const ProcessInfoSchema = z.object({
  id: z.string(),
  command: z.string(),
  workdir: z.string(),
  background: z.boolean(),
  running: z.boolean(),
  /** Exit code once exited; a process ended by a signal reports 128 + the signal number. */
  exit_code: z.number().int().nullable(),
  /** Name of the signal that ended the process (`SIGKILL`), or null. */
  signal: z.string().nullable(),
  started_at_unix: z.number().int(),
  exited_at_unix: z.number().int().nullable(),
  chat_id: z.string().nullable(),
  /** See `ProcessOutputResponseSchema.group_running`. */
  group_running: z.boolean(),
});
export type ProcessInfo = z.infer<typeof ProcessInfoSchema>;

export const ListProcessesQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(ProcessLimits.maxListLimit).optional(),
});
export type ListProcessesQuery = z.infer<typeof ListProcessesQuerySchema>;

export const ListProcessesResponseSchema = z.object({
  processes: z.array(ProcessInfoSchema),
});
export type ListProcessesResponse = z.infer<typeof ListProcessesResponseSchema>;

export const TruncationSchema = z.object({
  original_bytes: z.number().int(),
  retained_bytes: z.number().int(),
  omitted_bytes: z.number().int(),
  strategy: z.literal("head_tail"),
});
export type Truncation = z.infer<typeof TruncationSchema>;

export const ProcessOutputQuerySchema = z.strictObject({
  /** Only the exact value `true` blocks; anything else is a snapshot, as in Coder's API. */
  wait: z.string().optional(),
  /** Byte offset returned as `next_cursor` by an earlier read: answer only what came after it. */
  cursor: z.coerce.number().int().min(0).optional(),
  /** Milliseconds a wait may block; capped by the server. */
  timeout_ms: z.coerce.number().int().min(0).optional(),
});
export type ProcessOutputQuery = z.infer<typeof ProcessOutputQuerySchema>;

export const ProcessOutputResponseSchema = z.object({
  output: z.string(),
  /** Snapshot reads: how head+tail truncation cut the output, or null when nothing was cut. */
  truncated: TruncationSchema.nullable(),
  running: z.boolean(),
  exit_code: z.number().int().nullable(),
  /**
   * Whether anything in the process's group still lives: true whenever `running` is, and after
   * the command exited while something it started (`server &`) runs on in its group. Signals
   * reach those while it is true.
   */
  group_running: z.boolean(),
  /** Pass back as `?cursor=` to read only what is new. */
  next_cursor: z.number().int(),
  /** Incremental reads: bytes after the cursor that fell out of the retained window. */
  missed_bytes: z.number().int(),
  /** True when a wait (`?wait=true`, or `wait_ms` on start) ran out of time while still running. */
  timed_out: z.boolean(),
});
export type ProcessOutputResponse = z.infer<typeof ProcessOutputResponseSchema>;

export const StartProcessResponseSchema = z.object({
  id: z.string(),
  started: z.boolean(),
  /**
   * Present when the request had `wait_ms`: the output as `GET /{id}/output?wait=true` answers
   * it, with `timed_out: true` when the process was still running when the wait ended.
   */
  output: ProcessOutputResponseSchema.optional(),
});
export type StartProcessResponse = z.infer<typeof StartProcessResponseSchema>;

export const ProcessSignalNameSchema = z.enum(["terminate", "kill", "interrupt"]);
export type ProcessSignalName = z.infer<typeof ProcessSignalNameSchema>;

export const SignalProcessRequestSchema = z.strictObject({
  signal: ProcessSignalNameSchema,
});
export type SignalProcessRequest = z.infer<typeof SignalProcessRequestSchema>;

export const SignalProcessResponseSchema = z.object({
  id: z.string(),
  signal: ProcessSignalNameSchema,
});
export type SignalProcessResponse = z.infer<typeof SignalProcessResponseSchema>;

/** A chat id: a UUID, checked strictly so a typo never widens what a request may see. */
export const ChatIdSchema = z.uuid();

/** `Deckhand-Ancestor-Chat-Ids`: a JSON array of chat ids. */
export const AncestorChatIdsSchema = z.array(ChatIdSchema);
