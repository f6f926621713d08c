import type * as acp from "@agentclientprotocol/sdk";
import { type AgentEvent, type StopReason, StopReasonSchema } from "@deckhand/wire";
import { z } from "zod";
import { isInsideWorktree, worktreeRelative } from "../native/safety/worktree-path.ts";

export interface UpdateContext {
  /** The assistant message of the running turn. */
  messageId: string;
  /** The agent id events name (`commands`, `mode`). */
  agent: string;
  worktreePath: string;
}

/** A command the agent marks with `_meta.kind: "skill"` is a skill (see docs/providers.md). */
function commandKind(meta: Record<string, unknown> | null | undefined): "command" | "skill" {
  return meta?.kind === "skill" ? "skill" : "command";
}

function contentText(block: acp.ContentBlock): string | null {
  switch (block.type) {
    case "text":
      return block.text;
    case "resource_link":
      return block.uri;
    case "resource":
      return "text" in block.resource ? block.resource.text : block.resource.uri;
    default:
      return null;
  }
}

/** A tool call's content as text the UI can show: text, a diff's path, a terminal's id. */
function toolContentText(content: acp.ToolCallContent[] | null | undefined): string | undefined {
  if (!content || content.length === 0) return undefined;
  const parts = content.flatMap((item) => {
    if (item.type === "content") {
      const text = contentText(item.content);
      return text === null ? [] : [text];
    }
    if (item.type === "diff") return [`diff: ${item.path}`];
    return [`terminal: ${item.terminalId}`];
  });
  return parts.length === 0 ? undefined : parts.join("\n");
}

/** Locations as worktree-relative paths; places outside the worktree are not linked. */
function relativeLocations(
  locations: acp.ToolCallLocation[] | null | undefined,
  worktreePath: string,
): string[] | undefined {
  if (!locations) return undefined;
  return locations.flatMap((location) =>
    isInsideWorktree(worktreePath, location.path, { allowAbsolute: true })
      ? [worktreeRelative(worktreePath, location.path)]
      : [],
  );
}

/**
 * The Deckhand events a `session/update` becomes, in order. Updates with no event of their own
 * (the user's echoed message, config options, session info, context-window usage) become none.
 */
export function eventsFromUpdate(update: acp.SessionUpdate, context: UpdateContext): AgentEvent[] {
  const message_id = context.messageId;
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
    case "agent_thought_chunk": {
      const delta = contentText(update.content);
      if (delta === null || delta === "") return [];
      return [
        {
          type: update.sessionUpdate === "agent_message_chunk" ? "text" : "reasoning",
          message_id,
          delta,
        },
      ];
    }
    case "tool_call": {
      const locations = relativeLocations(update.locations, context.worktreePath);
      return [
        {
          type: "tool_call",
          message_id,
          tool_call_id: update.toolCallId,
          title: update.title,
          kind: update.kind ?? "other",
          status: update.status ?? "pending",
          ...(update.rawInput === undefined ? {} : { input: update.rawInput }),
          ...(locations === undefined ? {} : { locations }),
        },
      ];
    }
    case "tool_call_update": {
      const content = toolContentText(update.content);
      return [
        {
          type: "tool_update",
          message_id,
          tool_call_id: update.toolCallId,
          ...(update.status == null ? {} : { status: update.status }),
          ...(update.title == null ? {} : { title: update.title }),
          ...(content === undefined ? {} : { content }),
          ...(update.rawOutput === undefined ? {} : { output: update.rawOutput }),
        },
      ];
    }
    case "plan":
      return [
        {
          type: "plan",
          message_id,
          entries: update.entries.map((entry) => ({
            content: entry.content,
            priority: entry.priority,
            status: entry.status,
          })),
        },
      ];
    case "available_commands_update":
      return [
        {
          type: "commands",
          agent: context.agent,
          commands: update.availableCommands.map((command) => ({
            name: command.name,
            description: command.description,
            kind: commandKind(command._meta),
          })),
        },
      ];
    case "current_mode_update":
      return [{ type: "mode", agent: context.agent, mode_id: update.currentModeId }];
    default:
      return [];
  }
}

/**
 * The `tool_call` a permission request announces when the agent has not announced the call
 * itself (Gemini CLI asks before it runs a tool and then sends only `tool_call_update`s; codex-acp
 * announces commands after asking): every field the request's `toolCall` carries is kept, so the
 * call shows its kind, input and locations while the request waits.
 */
export function toolCallFromPermission(
  toolCall: acp.ToolCallUpdate,
  context: UpdateContext,
): Extract<AgentEvent, { type: "tool_call" }> {
  const locations = relativeLocations(toolCall.locations, context.worktreePath);
  return {
    type: "tool_call",
    message_id: context.messageId,
    tool_call_id: toolCall.toolCallId,
    title: toolCall.title ?? `${context.agent} asks to use a ${toolCall.kind ?? "other"} tool`,
    kind: toolCall.kind ?? "other",
    status: toolCall.status ?? "pending",
    ...(toolCall.rawInput === undefined ? {} : { input: toolCall.rawInput }),
    ...(locations === undefined ? {} : { locations }),
  };
}

/** ACP's stop reasons are Deckhand's, minus `error`; anything newer counts as a normal end. */
export function stopReasonFrom(reason: string): StopReason {
  const parsed = StopReasonSchema.safeParse(reason);
  return parsed.success && parsed.data !== "error" ? parsed.data : "end_turn";
}

const TokenCount = z.number().int().nonnegative();

/**
 * Token usage an agent reports on its prompt response. The field is unstable ACP (`usage` with
 * camelCase counts), which the SDK's stable client passes through without parsing, so it is
 * checked here and ignored when it does not fit.
 */
const PromptUsageSchema = z.object({
  inputTokens: TokenCount.nullish(),
  outputTokens: TokenCount.nullish(),
  totalTokens: TokenCount.nullish(),
});

export function usageFromResponse(response: unknown, messageId: string): AgentEvent | null {
  if (typeof response !== "object" || response === null || !("usage" in response)) return null;
  const parsed = PromptUsageSchema.safeParse(response.usage);
  if (!parsed.success) return null;
  const { inputTokens, outputTokens, totalTokens } = parsed.data;
  return {
    type: "usage",
    message_id: messageId,
    input_tokens: inputTokens ?? null,
    output_tokens: outputTokens ?? null,
    total_tokens:
      totalTokens ??
      (inputTokens != null && outputTokens != null ? inputTokens + outputTokens : null),
  };
}
