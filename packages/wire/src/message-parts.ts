import { z } from "zod";

/**
 * What each kind of a message's part holds. The server stores what `PartCollector` folds from a
 * turn's agent events (and a user message's text), so these schemas and that fold describe the
 * same values: `CollectedPart` is typed from them, and a property test checks that every part the
 * fold makes parses here unchanged. They live apart from `server-api.ts` and `session-stream.ts`
 * because both use them and the stream already imports the API's `MessageSchema`.
 */

export const ToolKindSchema = z.enum([
  "read",
  "edit",
  "delete",
  "move",
  "search",
  "execute",
  "think",
  "fetch",
  "switch_mode",
  "other",
]);
export const ToolCallStatusSchema = z.enum(["pending", "in_progress", "completed", "failed"]);

export const PermissionOptionKindSchema = z.enum([
  "allow_once",
  "allow_always",
  "reject_once",
  "reject_always",
]);
export type PermissionOptionKind = z.infer<typeof PermissionOptionKindSchema>;

export const PermissionOptionSchema = z.object({
  option_id: z.string(),
  name: z.string(),
  kind: PermissionOptionKindSchema,
});

/** The answer to a permission request: the chosen option's kind, or `cancelled`. */
export const PermissionOutcomeSchema = z.union([
  PermissionOptionKindSchema,
  z.literal("cancelled"),
]);

export const PlanEntrySchema = z.object({
  content: z.string(),
  priority: z.enum(["high", "medium", "low"]),
  status: z.enum(["pending", "in_progress", "completed"]),
});

/** A `text` or `reasoning` part: the deltas of a run of one kind, joined. */
export const TextPartContentSchema = z.object({ text: z.string() });

/** The permission an agent asked for a tool call, kept in the call's part. */
export const ToolCallPermissionSchema = z.object({
  request_id: z.string(),
  title: z.string(),
  options: z.array(PermissionOptionSchema),
  /** Null while the request waits for an answer. */
  outcome: PermissionOutcomeSchema.nullable(),
});
export type ToolCallPermission = z.infer<typeof ToolCallPermissionSchema>;

/**
 * A `tool_call` part: the call as announced, with its updates merged in as they came. Only the id
 * is certain: an agent may send an update (or ask permission) for a call before announcing it.
 */
export const ToolCallPartContentSchema = z.object({
  tool_call_id: z.string(),
  title: z.string().optional(),
  kind: ToolKindSchema.optional(),
  status: ToolCallStatusSchema.optional(),
  input: z.unknown().optional(),
  /** Files the call touches, relative to the worktree. */
  locations: z.array(z.string()).optional(),
  /** The call's output so far or its result, as text the UI can show. */
  content: z.string().optional(),
  /** The call's structured result, as the agent gave it. */
  output: z.unknown().optional(),
  permission: ToolCallPermissionSchema.optional(),
});
export type ToolCallPartContent = z.infer<typeof ToolCallPartContentSchema>;

/** A `plan` part: the agent's latest plan (each plan event replaces the entries). */
export const PlanPartContentSchema = z.object({ entries: z.array(PlanEntrySchema) });

/** An `error` part: what the agent reported. */
export const ErrorPartContentSchema = z.object({
  message: z.string(),
  /** The last lines an agent process wrote to stderr, when it crashed. */
  stderr_tail: z.string().optional(),
});

/**
 * `tool_result` and `file` parts are kinds the database accepts but nothing writes yet (a tool's
 * result is merged into its `tool_call` part): their content is any JSON object.
 */
export const ReservedPartContentSchema = z.record(z.string(), z.unknown());

/** One part of a message without its position, by kind: what `PartCollector` produces. */
export const CollectedPartSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("text"), content: TextPartContentSchema }),
  z.object({ kind: z.literal("reasoning"), content: TextPartContentSchema }),
  z.object({ kind: z.literal("tool_call"), content: ToolCallPartContentSchema }),
  z.object({ kind: z.literal("tool_result"), content: ReservedPartContentSchema }),
  z.object({ kind: z.literal("plan"), content: PlanPartContentSchema }),
  z.object({ kind: z.literal("file"), content: ReservedPartContentSchema }),
  z.object({ kind: z.literal("error"), content: ErrorPartContentSchema }),
]);
export type CollectedPart = z.infer<typeof CollectedPartSchema>;

const Position = z.number().int().nonnegative();

/** One stored part of a message: its position in the message, its kind and that kind's content. */
export const MessagePartSchema = z.discriminatedUnion("kind", [
  z.object({ position: Position, kind: z.literal("text"), content: TextPartContentSchema }),
  z.object({ position: Position, kind: z.literal("reasoning"), content: TextPartContentSchema }),
  z.object({
    position: Position,
    kind: z.literal("tool_call"),
    content: ToolCallPartContentSchema,
  }),
  z.object({
    position: Position,
    kind: z.literal("tool_result"),
    content: ReservedPartContentSchema,
  }),
  z.object({ position: Position, kind: z.literal("plan"), content: PlanPartContentSchema }),
  z.object({ position: Position, kind: z.literal("file"), content: ReservedPartContentSchema }),
  z.object({ position: Position, kind: z.literal("error"), content: ErrorPartContentSchema }),
]);
export type MessagePart = z.infer<typeof MessagePartSchema>;

/** The kinds of message parts, in the order above. */
export const MessagePartKindSchema = z.enum([
  "text",
  "reasoning",
  "tool_call",
  "tool_result",
  "plan",
  "file",
  "error",
]);
export type MessagePartKind = z.infer<typeof MessagePartKindSchema>;

/** What a part of a given kind holds. */
export type MessagePartContent<Kind extends MessagePartKind = MessagePartKind> = Extract<
  MessagePart,
  { kind: Kind }
>["content"];
