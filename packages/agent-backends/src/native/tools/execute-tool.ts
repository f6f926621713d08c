import type { ProcessOutputResponse } from "@deckhand/wire";
import { z } from "zod";
import { AgentBackendError } from "../../errors.ts";
import { applyPatch } from "../apply-patch/apply-patch.ts";
import { patchFromCommand } from "../apply-patch/patch-command.ts";
import { knownSafeCommand } from "../safety/command-safety.ts";
import { parseShellScript, withoutTrailingBackground } from "../safety/shell-words.ts";
import { resolveWorktreePath } from "../safety/worktree-path.ts";
import { defineTool } from "./define-tool.ts";
import { durationMsOr, parseDurationMs } from "./duration.ts";
import { type OutputTruncation, outputForModel } from "./model-output.ts";
import { fromProcessError, isAbortError, type ToolContext } from "./tool-context.ts";

/**
 * Set for every command the model runs: nothing may wait for a terminal, an editor or a pager,
 * because nobody is there to answer.
 */
export const NON_INTERACTIVE_ENV: Readonly<Record<string, string>> = Object.freeze({
  GIT_EDITOR: "true",
  GIT_SEQUENCE_EDITOR: "true",
  EDITOR: "true",
  VISUAL: "true",
  GIT_TERMINAL_PROMPT: "0",
  NO_COLOR: "1",
  TERM: "dumb",
  PAGER: "cat",
  GIT_PAGER: "cat",
});

/** How long a foreground command runs before execute answers (it keeps running), as in Coder. */
export const EXECUTE_DEFAULT_TIMEOUT_MS = 10_000;
export const EXECUTE_MAX_TIMEOUT_MS = 10 * 60_000;

export const ExecuteArgsSchema = z.object({
  command: z
    .string()
    .refine((command) => command.trim().length > 0, "command must not be empty")
    .describe("Shell command, run with /bin/sh -c. Its stdout and stderr are combined."),
  // A duration string, as Coder's execute takes it, so models trained on it call it right.
  timeout: z
    .string()
    .refine(
      (text) => {
        const ms = parseDurationMs(text);
        return ms !== null && ms > 0 && ms <= EXECUTE_MAX_TIMEOUT_MS;
      },
      `timeout must be a duration from '1ms' to '${EXECUTE_MAX_TIMEOUT_MS / 60_000}m', such as '30s' or '2m'`,
    )
    .optional()
    .describe(
      `How long to wait for a foreground command, e.g. '30s' or '5m' (default '${EXECUTE_DEFAULT_TIMEOUT_MS / 1000}s'). A command still running then is not stopped: its process id is returned; read it later with process_output.`,
    ),
  workdir: z
    .string()
    .min(1)
    .optional()
    .describe("Directory to run in, relative to the worktree; the worktree root by default."),
  run_in_background: z
    .boolean()
    .optional()
    .describe(
      "Start the command and return at once with its process id, for servers and watchers. A trailing `&` does the same.",
    ),
  with_approval: z
    .boolean()
    .optional()
    .describe(
      "Ask the user to approve this command before it runs, even if it would run without asking: for commands with effects beyond the worktree (network, installs, deployments, anything hard to undo). Give the reason in justification. Only allowed under the on-request approval policy; under any other policy the call is refused without running.",
    ),
  justification: z
    .string()
    .max(500)
    .optional()
    .describe("With with_approval: one sentence the user reads, saying why the command is needed."),
});
export type ExecuteArgs = z.infer<typeof ExecuteArgsSchema>;

export interface ExecuteResult {
  success: boolean;
  /** Combined stdout and stderr, at most 32 KiB (head and tail kept). */
  output: string;
  exit_code: number | null;
  wall_duration_ms: number;
  error: string | null;
  truncated: OutputTruncation | null;
  /** Advice for the model: how to follow up on a timeout or background process, a better tool. */
  note: string | null;
  /** The process id, when the command runs on (background, or still running at its timeout). */
  background_process_id: string | null;
}

const FILE_DUMP_PROGRAMS = new Set(["cat", "head", "tail", "less", "more", "bat", "nl", "sed"]);

/**
 * Advice for commands that only print a file (`cat file`, `head -n 20 file`, `sed -n 1,9p
 * file`): read_file pages through files with offsets and costs the model less.
 */
export function fileDumpNote(command: string): string | null {
  const script = parseShellScript(command);
  if (script.unsupported.length > 0 || script.commands.length !== 1) return null;
  const [only] = script.commands;
  const [program, ...args] = only!.words;
  if (program === undefined || !FILE_DUMP_PROGRAMS.has(program.text)) return null;
  if (only!.redirections.length > 0 || only!.assignments.length > 0) return null;
  if (program.text === "sed" && !knownSafeCommand(command).safe) return null;
  if (args.some((arg) => ["-f", "-F", "--follow"].includes(arg.text))) return null;
  const operands = args.filter((arg) => !arg.text.startsWith("-") && !/^\d+$/.test(arg.text));
  if (operands.length === 0) return null;
  return "This command only prints a file. Prefer the read_file tool for reading files: it takes a line offset and limit, pages through large files and costs less context.";
}

function stillRunningNote(id: string, waitedMs: number): string {
  return `The command is still running after ${waitedMs} ms as process ${id}; it was not stopped. Call process_output with process_id "${id}" to wait for it and read its output, or process_signal to stop it.`;
}

function finished(
  output: ProcessOutputResponse,
  startedAt: number,
  command: string,
): ExecuteResult {
  const forModel = outputForModel(output.output, output.truncated);
  const success = output.exit_code === 0;
  return {
    success,
    output: forModel.output,
    exit_code: output.exit_code,
    wall_duration_ms: Date.now() - startedAt,
    error: success ? null : `the command exited with code ${output.exit_code ?? "unknown"}`,
    truncated: forModel.truncated,
    note: success ? fileDumpNote(command) : null,
    background_process_id: null,
  };
}

/** `apply_patch <<'EOF' … EOF` sent to execute: applied as the apply_patch tool would. */
async function executeEmbeddedPatch(
  patch: string,
  context: ToolContext,
  startedAt: number,
): Promise<ExecuteResult> {
  const base = { truncated: null, note: null, background_process_id: null };
  try {
    const applied = await applyPatch(patch, {
      files: context.files,
      worktreeRoot: context.worktreeRoot,
      signal: context.signal,
    });
    return {
      ...base,
      success: true,
      output: `${applied.summary}\n`,
      exit_code: 0,
      wall_duration_ms: Date.now() - startedAt,
      error: null,
    };
  } catch (error) {
    if (!(error instanceof AgentBackendError) || error.code === "aborted") throw error;
    return {
      ...base,
      success: false,
      output: `${error.message}\n`,
      exit_code: 1,
      wall_duration_ms: Date.now() - startedAt,
      error: `apply_patch failed (${error.code})`,
    };
  }
}

/** Runs a shell command through the workspace agent's process API. */
export async function executeCommand(
  args: ExecuteArgs,
  context: ToolContext,
): Promise<ExecuteResult> {
  const startedAt = Date.now();
  const embeddedPatch = patchFromCommand(args.command);
  if (embeddedPatch !== null) return executeEmbeddedPatch(embeddedPatch, context, startedAt);
  const { processes, signal } = context;
  let command = args.command;
  let background = args.run_in_background ?? false;
  const foregroundPart = withoutTrailingBackground(command);
  if (foregroundPart !== null) {
    // `cmd &` in a shell the agent waits on would still hold the output pipe open; starting
    // it as a background process gives the model an id to follow it by instead.
    command = foregroundPart;
    background = true;
  }
  const workdir =
    args.workdir === undefined
      ? context.worktreeRoot
      : resolveWorktreePath(context.worktreeRoot, args.workdir, { allowAbsolute: true });
  if (signal.aborted)
    throw new AgentBackendError("aborted", "the command was interrupted before it started");
  let id: string;
  try {
    ({ id } = await processes.start({
      command,
      workdir,
      env: { ...NON_INTERACTIVE_ENV },
      background,
    }));
  } catch (error) {
    const failure = fromProcessError(error, "start the command", signal);
    if (failure.code === "aborted") throw failure;
    return {
      success: false,
      output: "",
      exit_code: null,
      wall_duration_ms: Date.now() - startedAt,
      error: failure.message,
      truncated: null,
      note: null,
      background_process_id: null,
    };
  }
  if (background) {
    return {
      success: true,
      output: "",
      exit_code: null,
      wall_duration_ms: Date.now() - startedAt,
      error: null,
      truncated: null,
      note: `Started in the background as process ${id}. Call process_output with process_id "${id}" to wait for it and read its output, or process_signal to stop it.`,
      background_process_id: id,
    };
  }
  const timeoutMs = durationMsOr(args.timeout, EXECUTE_DEFAULT_TIMEOUT_MS);
  let output: ProcessOutputResponse;
  try {
    output = await processes.waitForExit(id, { timeoutMs, signal });
  } catch (error) {
    if (isAbortError(error, signal)) {
      // An interrupted turn stops what it started in the foreground, as Codex does.
      await processes.signal(id, "terminate").catch(() => undefined);
      throw new AgentBackendError(
        "aborted",
        `the command was interrupted; process ${id} was stopped`,
        {
          cause: error,
        },
      );
    }
    throw fromProcessError(error, `wait for process ${id}`, signal);
  }
  if (!output.running) return finished(output, startedAt, command);
  const forModel = outputForModel(output.output, output.truncated);
  return {
    success: false,
    output: forModel.output,
    exit_code: null,
    wall_duration_ms: Date.now() - startedAt,
    error: `the command did not finish within ${timeoutMs} ms`,
    truncated: forModel.truncated,
    note: stillRunningNote(id, timeoutMs),
    background_process_id: id,
  };
}

export const executeTool = defineTool({
  name: "execute",
  description:
    "Run a shell command in the worktree (non-interactive: no terminal, editor or pager). Returns its combined output (at most 32 KiB, head and tail kept), exit code and duration. Long-running commands: set run_in_background (or end the command with `&`) and follow them with process_output. A command that outlives its timeout (default '10s') keeps running; its id is returned.",
  schema: ExecuteArgsSchema,
  execute: executeCommand,
});
