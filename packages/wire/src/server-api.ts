import { z } from "zod";
import { MessagePartSchema } from "./message-parts.ts";
import { ModelUsageSchema } from "./model-proxy.ts";

// Message parts are defined with their contents beside the schemas of agent events they come from.
export { type MessagePart, MessagePartKindSchema, MessagePartSchema } from "./message-parts.ts";

/**
 * The server's HTTP API under `/api`: resources and request bodies. Field names are snake_case,
 * timestamps ISO 8601 strings, ids UUIDs. Route paths and their schemas are listed in
 * `server-routes.ts`, which the OpenAPI document is generated from.
 */

const Id = z.uuid();
const Timestamp = z.iso.datetime({ offset: true });

/**
 * Why git would refuse `name` as a branch name, or null when it accepts it: the rules of
 * `git check-ref-format --branch` (git-check-ref-format(1)), checked here so that a bad name is a
 * 400 naming the field rather than a git failure later.
 */
export function branchNameProblem(name: string): string | null {
  if (name === "HEAD") return "HEAD is not a branch name; choose another";
  if (name.startsWith("-")) return "must not start with -";
  if (name.startsWith("/") || name.endsWith("/") || name.includes("//")) {
    return "must not start or end with /, nor hold an empty component (//)";
  }
  if (name.endsWith(".")) return "must not end with .";
  if (name.includes("..")) return "must not contain ..";
  if (name.includes("@{")) return "must not contain @{";
  if (/[\x00-\x20\x7f~^:?*[\\]/.test(name)) {
    return "must not contain spaces, control characters or any of ~ ^ : ? * [ \\";
  }
  for (const component of name.split("/")) {
    if (component.startsWith(".")) return "no /-separated component may start with .";
    if (component.endsWith(".lock")) return "no /-separated component may end with .lock";
  }
  return null;
}

/** Branch names Deckhand creates or starts from: what git accepts, at most 200 characters. */
const BranchName = z
  .string()
  .min(1)
  .max(200)
  .check((context) => {
    const problem = branchNameProblem(context.value);
    if (problem !== null) {
      context.issues.push({
        code: "custom",
        input: context.value,
        message: `must be a valid git branch name: ${problem}`,
      });
    }
  });

/** Agent ids as the provider registry names them: `deckhand`, `codex`, `my-agent`. */
export const AgentIdSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,62}$/,
    "must be a provider id (lowercase letters, digits, - and _)",
  );

export const ProjectSchema = z.object({
  id: Id,
  name: z.string(),
  repository_path: z.string().nullable(),
  repository_url: z.string().nullable(),
  default_branch: z.string(),
  created_at: Timestamp,
});
export type Project = z.infer<typeof ProjectSchema>;

export const CreateProjectRequestSchema = z
  .strictObject({
    name: z.string().min(1).max(200).optional(),
    /** An existing git repository on the server's machine. */
    repository_path: z.string().min(1).optional(),
    /** A repository to clone (any URL `git clone` accepts). */
    repository_url: z.string().min(1).optional(),
    /** The branch sessions start from; the repository's current HEAD branch when absent. */
    default_branch: BranchName.optional(),
  })
  .refine((body) => (body.repository_path === undefined) !== (body.repository_url === undefined), {
    message: "give exactly one of repository_path or repository_url",
  });
export type CreateProjectRequest = z.infer<typeof CreateProjectRequestSchema>;

export const ProjectListSchema = z.object({ projects: z.array(ProjectSchema) });
export type ProjectList = z.infer<typeof ProjectListSchema>;

export const SessionStatusSchema = z.enum(["open", "closed"]);

/** When Deckhand's native agent asks before acting, as in Codex. */
export const ApprovalPolicySchema = z.enum(["untrusted", "on-request", "on-failure", "never"]);
export type ApprovalPolicyName = z.infer<typeof ApprovalPolicySchema>;

/**
 * What a session's agents are doing, derived from stored state: `running` while a turn is in
 * progress, `needs_input` while a permission request of a running turn awaits an answer,
 * `failed` when the session's last turn failed, `idle` otherwise.
 */
export const SessionActivitySchema = z.enum(["running", "needs_input", "failed", "idle"]);
export type SessionActivity = z.infer<typeof SessionActivitySchema>;

export const SessionSchema = z.object({
  id: Id,
  project_id: Id,
  title: z.string(),
  branch: z.string(),
  status: SessionStatusSchema,
  approval_policy: ApprovalPolicySchema,
  /** The git worktree the session's agents share; null once the session is closed. */
  worktree_path: z.string().nullable(),
  /** The commit the session branch started from. */
  base_commit: z.string().nullable(),
  created_at: Timestamp,
  closed_at: Timestamp.nullable(),
  activity: SessionActivitySchema,
  /** The id of the latest event on the session's stream (0 when none): a client that saw less has unread events. */
  last_event_id: z.number().int().nonnegative(),
  /** When something last happened in the session (its latest event), or when it was made. */
  last_activity_at: Timestamp,
  /** Changes its agents made that wait for review. */
  pending_changes: z.number().int().nonnegative(),
  /** When the session was archived; null when it is not. Archiving only hides it from lists. */
  archived_at: Timestamp.nullable(),
  /** The agent chosen when the session was opened; null when none was. */
  agent: z.string().nullable(),
  /** The model its turns ask that agent for, unless a message names another; null: its default. */
  model: z.string().nullable(),
  /** The mode its turns put that agent in, unless a message names another; null: its default. */
  mode: z.string().nullable(),
});
export type Session = z.infer<typeof SessionSchema>;

/** A model or mode id as a provider's snapshot lists it. */
const OptionId = z.string().min(1).max(200);

/** `GET /api/projects/:id/branches`: what a session can start from, the default first. */
export const ProjectBranchListSchema = z.object({
  default_branch: z.string(),
  /** Local branches, then the origin's branches a clone has not checked out, by name. */
  branches: z.array(z.string()),
});
export type ProjectBranchList = z.infer<typeof ProjectBranchListSchema>;

export const CreateSessionRequestSchema = z.strictObject({
  title: z.string().max(500).optional(),
  /** The new branch's name; `deckhand/<short session id>` when absent. */
  branch: BranchName.optional(),
  /** When the native agent asks before acting; `on-request` when absent. */
  approval_policy: ApprovalPolicySchema.optional(),
  /** The branch (or any commit) the session starts from; the project's default branch when absent. */
  base_branch: BranchName.optional(),
  /** The session's agent: a provider id that is enabled and ready. Needed for `model` and `mode`. */
  agent: AgentIdSchema.optional(),
  /** One of the agent's models in the providers snapshot. */
  model: OptionId.optional(),
  /** One of the agent's modes in the providers snapshot. */
  mode: OptionId.optional(),
});
export type CreateSessionRequest = z.infer<typeof CreateSessionRequestSchema>;

export const SessionListSchema = z.object({ sessions: z.array(SessionSchema) });
export type SessionList = z.infer<typeof SessionListSchema>;

export const SessionListQuerySchema = z.strictObject({
  /** `false` (the default) lists sessions that are not archived, `true` only archived ones, `any` both. */
  archived: z.enum(["true", "false", "any"]).optional(),
  /** Words to find, case-insensitively, in the session's title or branch or its project's name. */
  q: z.string().max(200).optional(),
});
export type SessionListQuery = z.infer<typeof SessionListQuerySchema>;

export const UpdateSessionRequestSchema = z.strictObject({
  /** Archive (true) or unarchive (false) the session. */
  archived: z.boolean(),
});
export type UpdateSessionRequest = z.infer<typeof UpdateSessionRequestSchema>;

/**
 * One frame of the session activity stream: a session whose activity, latest event or archived
 * state changed, whole. `id` counts the frames of one connection, continuing from the `after`
 * the client gave, so a resumed stream client keeps them in order; the stream holds no backlog
 * (a client lists sessions again once it is `ready`).
 */
export const SessionActivityEventSchema = z.object({
  id: z.number().int().positive(),
  session: SessionSchema,
});
export type SessionActivityEvent = z.infer<typeof SessionActivityEventSchema>;

export const CloseSessionQuerySchema = z.strictObject({
  /** Close even when the worktree has unapplied changes; they are discarded. */
  force: z
    .enum(["true", "false"])
    .transform((value) => value === "true")
    .optional(),
});
export type CloseSessionQuery = z.infer<typeof CloseSessionQuerySchema>;

export const ChatSchema = z.object({
  id: Id,
  session_id: Id,
  parent_chat_id: Id.nullable(),
  title: z.string(),
  created_at: Timestamp,
});
export type Chat = z.infer<typeof ChatSchema>;

export const CreateChatRequestSchema = z.strictObject({
  title: z.string().max(500).optional(),
  /** A sub-agent's chat names the chat it was spawned from. */
  parent_chat_id: Id.optional(),
});
export type CreateChatRequest = z.infer<typeof CreateChatRequestSchema>;

export const ChatListSchema = z.object({ chats: z.array(ChatSchema) });
export type ChatList = z.infer<typeof ChatListSchema>;

export const MessageRoleSchema = z.enum(["user", "assistant", "system"]);
export const MessageStatusSchema = z.enum([
  "pending",
  "streaming",
  "complete",
  "failed",
  "cancelled",
]);
export const MessageSchema = z.object({
  id: Id,
  chat_id: Id,
  role: MessageRoleSchema,
  /** The agent a user message is for, or the agent that wrote an assistant message. */
  agent: z.string().nullable(),
  status: MessageStatusSchema,
  error: z.string().nullable(),
  parts: z.array(MessagePartSchema),
  created_at: Timestamp,
  completed_at: Timestamp.nullable(),
});
export type Message = z.infer<typeof MessageSchema>;

export const CreateMessageRequestSchema = z.strictObject({
  /** The agent that should answer: a provider id such as `deckhand` or `codex`. */
  agent: AgentIdSchema,
  text: z.string().min(1).max(1_000_000),
  /** This turn's model, one the agent offers; the session's (for its own agent) when absent. */
  model: OptionId.optional(),
  /** This turn's mode, one the agent offers; the session's (for its own agent) when absent. */
  mode: OptionId.optional(),
});
export type CreateMessageRequest = z.infer<typeof CreateMessageRequestSchema>;

export const CreateMessageResponseSchema = z.object({
  message: MessageSchema,
  /** The queued task that runs the agent's turn. */
  task_id: z.number().int().positive(),
});
export type CreateMessageResponse = z.infer<typeof CreateMessageResponseSchema>;

export const MessageListSchema = z.object({ messages: z.array(MessageSchema) });
export type MessageList = z.infer<typeof MessageListSchema>;

export const PendingChangeStatusSchema = z.enum(["pending", "applied", "rejected"]);

export const PendingChangeSchema = z.object({
  id: Id,
  session_id: Id,
  chat_id: Id.nullable(),
  /** The agent that made the change. */
  agent: z.string(),
  /** Path relative to the worktree root. */
  path: z.string(),
  /**
   * Unified diff of the file against the session branch (its HEAD, which moves as changes are
   * applied). Model tokens in it are redacted; applying commits the file as it is on disk.
   */
  diff: z.string(),
  status: PendingChangeStatusSchema,
  created_at: Timestamp,
  resolved_at: Timestamp.nullable(),
});
export type PendingChange = z.infer<typeof PendingChangeSchema>;

export const PendingChangeListQuerySchema = z.strictObject({
  status: PendingChangeStatusSchema.optional(),
});

export const PendingChangeListSchema = z.object({ pending_changes: z.array(PendingChangeSchema) });
export type PendingChangeList = z.infer<typeof PendingChangeListSchema>;

export const ApplyPendingChangeResponseSchema = z.object({
  pending_change: PendingChangeSchema,
  /** The commit on the session branch that holds the change. */
  commit: z.string(),
});
export type ApplyPendingChangeResponse = z.infer<typeof ApplyPendingChangeResponseSchema>;

export const RejectPendingChangeResponseSchema = z.object({ pending_change: PendingChangeSchema });

export const UsageQuerySchema = z.strictObject({ job_id: z.string().min(1) });

/** Sums of a set of usage rows. */
export const UsageTotalsSchema = z.object({
  requests: z.number().int().nonnegative(),
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  total_tokens: z.number().int().nonnegative(),
  request_bytes: z.number().int().nonnegative(),
  response_bytes: z.number().int().nonnegative(),
});
export type UsageTotals = z.infer<typeof UsageTotalsSchema>;

/** One request the model proxy forwarded, as the usage routes list it. */
export const UsageRowSchema = ModelUsageSchema.extend({ created_at: Timestamp });
export type UsageRow = z.infer<typeof UsageRowSchema>;

export const UsageResponseSchema = z.object({
  job_id: z.string(),
  usage: z.array(UsageRowSchema),
  totals: UsageTotalsSchema,
});
export type UsageResponse = z.infer<typeof UsageResponseSchema>;

export const ApiTokenSchema = z.object({
  id: Id,
  name: z.string(),
  created_at: Timestamp,
  last_used_at: Timestamp.nullable(),
  revoked_at: Timestamp.nullable(),
});
export type ApiToken = z.infer<typeof ApiTokenSchema>;

export const CreateApiTokenRequestSchema = z.strictObject({ name: z.string().min(1).max(200) });

export const CreateApiTokenResponseSchema = z.object({
  api_token: ApiTokenSchema,
  /** The token itself. Shown this once: only its hash is stored. */
  token: z.string(),
});
export type CreateApiTokenResponse = z.infer<typeof CreateApiTokenResponseSchema>;

export const ApiTokenListSchema = z.object({ api_tokens: z.array(ApiTokenSchema) });

export const ServerHealthSchema = z.object({
  status: z.enum(["ok", "degraded"]),
  version: z.string(),
  database: z.object({ ok: z.boolean(), kind: z.enum(["pglite", "postgres"]) }),
  queue: z.object({ ok: z.boolean() }),
  /** The local workspace agent; null when none was started. */
  agent: z.object({ ok: z.boolean(), url: z.string() }).nullable(),
  /** The agent backends this process keeps alive, per (session, agent). */
  agents: z.array(
    z.object({
      session_id: z.string(),
      agent: z.string(),
      status: z.enum(["idle", "active", "crashed", "closed"]),
      busy: z.boolean(),
      idle_ms: z.number().int().nonnegative(),
      last_error: z.string().nullable(),
    }),
  ),
});
export type ServerHealth = z.infer<typeof ServerHealthSchema>;

export const AgentControlResponseSchema = z.object({
  /** The request was handed to whichever server process runs the agent. */
  delivered: z.literal(true),
});
export type AgentControlResponse = z.infer<typeof AgentControlResponseSchema>;

export const AnswerPermissionRequestSchema = z.strictObject({
  /** The kind of the option chosen, or `cancelled` to withdraw the request. */
  outcome: z.enum(["allow_once", "allow_always", "reject_once", "reject_always", "cancelled"]),
});
export type AnswerPermissionRequest = z.infer<typeof AnswerPermissionRequestSchema>;
