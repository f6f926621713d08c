import type { ToolKindSchema } from "@deckhand/wire";
import type { z } from "zod";
import { parsePatch, patchPaths } from "../apply-patch/parse-patch.ts";
import { patchFromCommand } from "../apply-patch/patch-command.ts";

export type ToolKind = z.infer<typeof ToolKindSchema>;

/** How the UI groups a native tool: what it does to the worktree, not what it is called. */
export function toolKind(name: string): ToolKind {
  switch (name) {
    case "execute":
      return "execute";
    case "read_file":
      return "read";
    case "write_file":
    case "edit_file":
    case "apply_patch":
      return "edit";
    default:
      // process_* act on processes the agent started; nothing the UI links to a file.
      return "other";
  }
}

/** The arguments as an object when they are one, for titles; the tool validates them later. */
export function looseArguments(raw: unknown): Record<string, unknown> {
  let value = raw;
  if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch {
      return {};
    }
  }
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

const TITLE_LIMIT = 200;

function clip(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > TITLE_LIMIT ? `${line.slice(0, TITLE_LIMIT - 1)}…` : line;
}

function changedPaths(patch: unknown): string[] {
  if (typeof patch !== "string") return [];
  try {
    return patchPaths(parsePatch(patch));
  } catch {
    return [];
  }
}

/** Files a call touches, relative to the worktree as the model wrote them. */
export function toolLocations(name: string, args: Record<string, unknown>): string[] {
  switch (name) {
    case "read_file":
    case "write_file":
    case "edit_file":
      return typeof args.path === "string" ? [args.path] : [];
    case "apply_patch":
      return changedPaths(args.patch);
    case "execute": {
      const embedded = typeof args.command === "string" ? patchFromCommand(args.command) : null;
      return embedded === null ? [] : changedPaths(embedded);
    }
    default:
      return [];
  }
}

/** One line saying what a call does, for the tool call card and the permission prompt. */
export function toolTitle(name: string, args: Record<string, unknown>): string {
  const text = (key: string) => (typeof args[key] === "string" ? (args[key] as string) : "?");
  switch (name) {
    case "execute":
      return clip(text("command"));
    case "read_file":
      return clip(`Read ${text("path")}`);
    case "write_file":
      return clip(`Write ${text("path")}`);
    case "edit_file":
      return clip(`Edit ${text("path")}`);
    case "apply_patch": {
      const paths = changedPaths(args.patch);
      return clip(paths.length > 0 ? `Apply patch to ${paths.join(", ")}` : "Apply patch");
    }
    case "process_output":
      return clip(`Read the output of process ${text("process_id")}`);
    case "process_list":
      return "List processes";
    case "process_signal":
      return clip(`Send ${text("signal")} to process ${text("process_id")}`);
    default:
      return clip(name);
  }
}
