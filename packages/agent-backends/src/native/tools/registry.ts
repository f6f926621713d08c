import { errorMessage } from "@deckhand/errors";
import { z } from "zod";
import { AgentBackendError } from "../../errors.ts";
import { parsePatch, patchPaths } from "../apply-patch/parse-patch.ts";
import { patchFromCommand } from "../apply-patch/patch-command.ts";
import {
  type ApprovalPolicy,
  assessCommand,
  assessPatch,
  type SafetyAssessment,
} from "../safety/command-safety.ts";
import { withoutTrailingBackground } from "../safety/shell-words.ts";
import { applyPatchTool } from "./apply-patch-tool.ts";
import { executeTool } from "./execute-tool.ts";
import { editFileTool, readFileTool, writeFileTool } from "./file-tools.ts";
import { capOutput, toolResultText } from "./model-output.ts";
import { processListTool, processOutputTool, processSignalTool } from "./process-tools.ts";
import type { NativeTool, ToolContext } from "./tool-context.ts";

/** Every tool the native agent offers, in the order the model is told about them. */
export const nativeTools: readonly NativeTool[] = [
  executeTool,
  processOutputTool,
  processListTool,
  processSignalTool,
  readFileTool,
  writeFileTool,
  editFileTool,
  applyPatchTool,
];

export type NativeToolName =
  | "execute"
  | "process_output"
  | "process_list"
  | "process_signal"
  | "read_file"
  | "write_file"
  | "edit_file"
  | "apply_patch";

/** A function tool in an OpenAI Responses API request's `tools`. */
export interface ResponsesFunctionTool {
  type: "function";
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  strict: false;
}

/**
 * The Responses API `tools` array for `tools`. Every tool, apply_patch included, is a function
 * tool with JSON arguments; not strict, since strict mode would make every optional field
 * required.
 */
export function responsesTools(
  tools: readonly NativeTool[] = nativeTools,
): ResponsesFunctionTool[] {
  return tools.map((tool) => ({
    type: "function",
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    strict: false,
  }));
}

export function findNativeTool(
  name: string,
  tools: readonly NativeTool[] = nativeTools,
): NativeTool | undefined {
  return tools.find((tool) => tool.name === name);
}

/**
 * What a tool call came to: the result, or the error the model is told about. `output` is the
 * text the model gets, at most 32 KiB of valid UTF-8 (see toolResultText).
 */
export type ToolOutcome =
  | { ok: true; result: unknown; output: string }
  | { ok: false; error: AgentBackendError; output: string };

function parseArguments(tool: NativeTool, raw: unknown): unknown {
  let value = raw;
  if (typeof raw === "string") {
    try {
      value = raw.trim() === "" ? {} : JSON.parse(raw);
    } catch (error) {
      throw new AgentBackendError(
        "invalid_arguments",
        `the arguments of ${tool.name} are not valid JSON (${errorMessage(error)}); send a JSON object`,
        { cause: error },
      );
    }
  }
  const parsed = tool.schema.safeParse(value);
  if (!parsed.success) {
    throw new AgentBackendError(
      "invalid_arguments",
      `invalid arguments for ${tool.name}:\n${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

function failure(error: AgentBackendError): ToolOutcome {
  return { ok: false, error, output: capOutput(`Error (${error.code}): ${error.message}`).text };
}

/**
 * Runs one tool call from the model: validates the arguments (a JSON string or an object),
 * runs the tool and renders what goes back to the model. Every failure becomes an outcome the
 * model can read, except an interrupt, which throws AgentBackendError `aborted`.
 */
export async function invokeTool(
  name: string,
  rawArguments: unknown,
  context: ToolContext,
  tools: readonly NativeTool[] = nativeTools,
): Promise<ToolOutcome> {
  const tool = findNativeTool(name, tools);
  if (tool === undefined) {
    return failure(
      new AgentBackendError(
        "unknown_tool",
        `there is no tool named ${JSON.stringify(name)}; the tools are ${tools.map((known) => known.name).join(", ")}`,
      ),
    );
  }
  try {
    const result = await tool.execute(parseArguments(tool, rawArguments), context);
    return { ok: true, result, output: toolResultText(result) };
  } catch (error) {
    if (context.signal.aborted) {
      throw error instanceof AgentBackendError && error.code === "aborted"
        ? error
        : new AgentBackendError("aborted", `${name} was interrupted`, { cause: error });
    }
    if (error instanceof AgentBackendError) {
      if (error.code === "aborted") throw error;
      return failure(error);
    }
    const message = errorMessage(error);
    return failure(
      new AgentBackendError("internal", `${name} failed: ${message}`, { cause: error }),
    );
  }
}

const AUTO: SafetyAssessment = {
  decision: "auto_approve",
  reason: "the tool only reads, or acts on this chat's own processes",
  askOnFailure: false,
};

function assessPatchText(
  patch: string,
  worktreeRoot: string,
  policy: ApprovalPolicy,
): SafetyAssessment {
  let paths: string[];
  try {
    paths = patchPaths(parsePatch(patch));
  } catch {
    return { ...AUTO, reason: "the patch does not parse; it will be refused unapplied" };
  }
  return assessPatch(paths, worktreeRoot, policy);
}

/**
 * Whether a tool call may run without asking under `policy`: execute by the command safety
 * assessment, file changes by the patch assessment of the paths they touch. A call whose
 * arguments do not parse is approved: the tool refuses it without changing anything.
 */
export function assessToolCall(
  name: string,
  rawArguments: unknown,
  policy: ApprovalPolicy,
  worktreeRoot: string,
  tools: readonly NativeTool[] = nativeTools,
): SafetyAssessment {
  const tool = findNativeTool(name, tools);
  if (tool === undefined) return AUTO;
  let args: Record<string, unknown>;
  try {
    args = parseArguments(tool, rawArguments) as Record<string, unknown>;
  } catch {
    return { ...AUTO, reason: "the arguments are invalid; the tool will refuse them" };
  }
  switch (name) {
    case "execute": {
      const command = String(args.command);
      // What runs: a trailing `&` only sends the command to the background.
      const foreground = withoutTrailingBackground(command) ?? command;
      if (args.with_approval === true) {
        return assessCommand(foreground, policy, {
          withApproval: true,
          ...(typeof args.justification === "string" ? { justification: args.justification } : {}),
        });
      }
      const embedded = patchFromCommand(command);
      if (embedded !== null) return assessPatchText(embedded, worktreeRoot, policy);
      return assessCommand(foreground, policy, {
        place: {
          worktreeRoot,
          ...(typeof args.workdir === "string" ? { cwd: args.workdir } : {}),
        },
      });
    }
    case "write_file":
    case "edit_file":
      return assessPatch([String(args.path)], worktreeRoot, policy);
    case "apply_patch":
      return assessPatchText(String(args.patch), worktreeRoot, policy);
    default:
      return AUTO;
  }
}
