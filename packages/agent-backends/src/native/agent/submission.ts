import { PermissionOptionKindSchema } from "@deckhand/wire";
import { z } from "zod";
import { ApprovalPolicySchema } from "../safety/command-safety.ts";

/**
 * What can be asked of the native agent, after Codex's submission queue: every call on the
 * backend becomes one of these, handled in the order submitted. They are recorded with the
 * events so a session can be replayed, hence a schema (recordings are read back from disk).
 */
export const SubmissionSchema = z.discriminatedUnion("type", [
  /** Settings for the model requests still to come; the running one is not touched. */
  z.object({
    type: z.literal("configure"),
    model: z.string().min(1).optional(),
    approval_policy: ApprovalPolicySchema.optional(),
    instructions: z.string().optional(),
  }),
  /**
   * A user message. With a turn running it is injected: appended to the conversation before
   * the turn's next model request. Otherwise it starts a turn whose events carry `message_id`.
   */
  z.object({ type: z.literal("user_input"), message_id: z.uuid(), text: z.string() }),
  /** Stops the running turn, if any (stop reason `cancelled`). */
  z.object({ type: z.literal("interrupt") }),
  /** The user's answer to a `permission_request`. */
  z.object({
    type: z.literal("approval"),
    request_id: z.string().min(1),
    outcome: z.union([PermissionOptionKindSchema, z.literal("cancelled")]),
  }),
]);
export type Submission = z.infer<typeof SubmissionSchema>;
