import { z } from "zod";
import {
  PermissionOptionSchema,
  PermissionOutcomeSchema,
  PlanEntrySchema,
  ToolCallStatusSchema,
  ToolKindSchema,
} from "./message-parts.ts";
import { MessageSchema } from "./server-api.ts";

/**
 * What travels on a session's WebSocket stream. Agent events (text, reasoning, tool calls, ...)
 * come from agent backends; session events (a message was posted, a turn started, changes are
 * pending) from the server. Every event is persisted before it is sent and carries the id the
 * database gave it, so a client that reconnects with the last id it saw misses nothing.
 */

const Id = z.uuid();

export const StopReasonSchema = z.enum([
  "end_turn",
  "max_tokens",
  "max_turn_requests",
  "refusal",
  "cancelled",
  "error",
]);
export type StopReason = z.infer<typeof StopReasonSchema>;

export {
  type PermissionOptionKind,
  PermissionOptionKindSchema,
  ToolCallStatusSchema,
  ToolKindSchema,
} from "./message-parts.ts";

/** Agent events: what an agent backend emits during a turn, kept distinct per kind. */
export const AgentEventSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), message_id: Id, delta: z.string() }),
  z.object({ type: z.literal("reasoning"), message_id: Id, delta: z.string() }),
  z.object({
    type: z.literal("tool_call"),
    message_id: Id,
    tool_call_id: z.string(),
    title: z.string(),
    kind: ToolKindSchema,
    status: ToolCallStatusSchema,
    input: z.unknown().optional(),
    /** Files the call touches, relative to the worktree, for the UI to link. */
    locations: z.array(z.string()).optional(),
  }),
  z.object({
    type: z.literal("tool_update"),
    message_id: Id,
    tool_call_id: z.string(),
    status: ToolCallStatusSchema.optional(),
    title: z.string().optional(),
    /** Output so far or the result, as text the UI can show. */
    content: z.string().optional(),
    output: z.unknown().optional(),
  }),
  z.object({
    type: z.literal("plan"),
    message_id: Id,
    entries: z.array(PlanEntrySchema),
  }),
  z.object({
    type: z.literal("commands"),
    agent: z.string(),
    commands: z.array(
      z.object({
        name: z.string(),
        description: z.string(),
        kind: z.enum(["command", "skill"]),
      }),
    ),
  }),
  z.object({ type: z.literal("mode"), agent: z.string(), mode_id: z.string() }),
  z.object({
    type: z.literal("permission_request"),
    message_id: Id,
    request_id: z.string(),
    tool_call_id: z.string().nullable(),
    title: z.string(),
    options: z.array(PermissionOptionSchema),
  }),
  z.object({
    type: z.literal("permission_resolved"),
    message_id: Id,
    request_id: z.string(),
    /** The chosen option's kind, or `cancelled` when the turn was cancelled first. */
    outcome: PermissionOutcomeSchema,
  }),
  z.object({
    type: z.literal("usage"),
    message_id: Id,
    input_tokens: z.number().int().nonnegative().nullable(),
    output_tokens: z.number().int().nonnegative().nullable(),
    total_tokens: z.number().int().nonnegative().nullable(),
  }),
  z.object({
    type: z.literal("retry"),
    message_id: Id,
    attempt: z.number().int().positive(),
    delay_ms: z.number().int().nonnegative(),
    reason: z.string(),
  }),
  z.object({
    type: z.literal("error"),
    message_id: Id.nullable(),
    message: z.string(),
    /** The last lines an agent process wrote to stderr, when it crashed. */
    stderr_tail: z.string().optional(),
  }),
  z.object({ type: z.literal("turn_end"), message_id: Id, stop_reason: StopReasonSchema }),
]);
export type AgentEvent = z.infer<typeof AgentEventSchema>;
export type AgentEventType = AgentEvent["type"];

/** Session events: what the server itself announces on a session's stream. */
export const SessionNoticeSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("message_created"), message: MessageSchema }),
  z.object({
    type: z.literal("turn_started"),
    chat_id: Id,
    /** The assistant message the turn's events belong to. */
    message_id: Id,
    user_message_id: Id,
    agent: z.string(),
  }),
  z.object({
    type: z.literal("pending_changes"),
    chat_id: Id.nullable(),
    agent: z.string(),
    pending_change_ids: z.array(Id),
  }),
  z.object({
    type: z.literal("pending_change_resolved"),
    pending_change_id: Id,
    status: z.enum(["applied", "rejected"]),
  }),
  z.object({
    type: z.literal("agent_session"),
    agent: z.string(),
    /** The agent's own session id. */
    agent_session_id: z.string(),
    /**
     * True when the agent resumed its earlier session; false when it had to start a new one
     * (its earlier conversation is not in the agent's context any more).
     */
    resumed: z.boolean(),
    /** Whether there was an earlier session to resume. */
    had_previous: z.boolean(),
    /** The job its model usage is recorded under (`GET /api/usage?job_id=`); null without one. */
    usage_job_id: z.string().nullable(),
  }),
  z.object({
    type: z.literal("commits_folded"),
    chat_id: Id.nullable(),
    agent: z.string(),
    /**
     * Commits the agent made on the session branch during its turn, oldest first, undone into
     * the worktree so they are reviewed as pending changes like any other edit.
     */
    commits: z.array(z.object({ sha: z.string(), subject: z.string() })),
  }),
  z.object({
    type: z.literal("turn_finished"),
    chat_id: Id,
    message_id: Id,
    agent: z.string(),
    status: z.enum(["complete", "failed", "cancelled"]),
    /**
     * Why a `cancelled` turn stopped when no person cancelled it: `interrupted`, the server
     * stopped it (it was shutting down); send the message again.
     */
    reason: z.enum(["interrupted"]).optional(),
  }),
  z.object({ type: z.literal("session_closed") }),
]);
export type SessionNotice = z.infer<typeof SessionNoticeSchema>;

export const SessionEventPayloadSchema = z.union([AgentEventSchema, SessionNoticeSchema]);
export type SessionEventPayload = z.infer<typeof SessionEventPayloadSchema>;

/** One persisted event of a session: its id is the resume cursor. */
export const SessionEventSchema = z.object({
  id: z.number().int().positive(),
  session_id: Id,
  /** Which chat it belongs to; null for session-wide events. */
  chat_id: Id.nullable(),
  created_at: z.iso.datetime({ offset: true }),
  event: SessionEventPayloadSchema,
});
export type SessionEvent = z.infer<typeof SessionEventSchema>;

/** Frames the server sends on a session stream. */
export const SessionStreamFrameSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("event"), event: SessionEventSchema }),
  /**
   * Sent once the backlog after the client's cursor has been delivered; everything after it is
   * live. `last_event_id` is 0 for a session without events.
   */
  z.object({ type: z.literal("ready"), last_event_id: z.number().int().nonnegative() }),
  z.object({
    type: z.literal("error"),
    error: z.object({ code: z.string(), message: z.string() }),
  }),
]);
export type SessionStreamFrame = z.infer<typeof SessionStreamFrameSchema>;

/** The session stream's query: `after` is the last event id the client has seen. */
export const SessionStreamQuerySchema = z.strictObject({
  after: z.coerce.number().int().nonnegative().optional(),
});
export type SessionStreamQuery = z.infer<typeof SessionStreamQuerySchema>;
