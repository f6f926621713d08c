import { ProcessLimits, type Truncation } from "@deckhand/wire";
import { z } from "zod";
import { defineTool } from "./define-tool.ts";
import { durationMsOr, parseDurationMs } from "./duration.ts";
import { type OutputTruncation, outputForModel } from "./model-output.ts";
import { fromProcessError } from "./tool-context.ts";

export const PROCESS_OUTPUT_DEFAULT_WAIT_MS = 10_000;

export const ProcessOutputArgsSchema = z.object({
  process_id: z.string().min(1).describe("Id of a process started by execute."),
  // A duration string, as Coder's process_output takes it, so models trained on it call it right.
  wait_timeout: z
    .string()
    .refine(
      (text) => parseDurationMs(text) !== null,
      "wait_timeout must be a duration such as '10s', '1m30s', '500ms' or '0s'",
    )
    .optional()
    .describe(
      `How long to wait for the process to exit before answering, e.g. '30s' or '2m' (default '${PROCESS_OUTPUT_DEFAULT_WAIT_MS / 1000}s', at most '${ProcessLimits.waitCapMs / 60_000}m'). '0s' answers at once with a snapshot.`,
    ),
});

export interface ProcessOutputResult {
  process_id: string;
  running: boolean;
  exit_code: number | null;
  /** Whether anything in the process's group still runs, e.g. what the command left behind. */
  group_running: boolean;
  output: string;
  truncated: OutputTruncation | null;
  note: string | null;
}

export const processOutputTool = defineTool({
  name: "process_output",
  description:
    "Wait for a process started by execute to exit (up to wait_timeout, default '10s'; '0s' for an immediate snapshot), then return its output so far (at most 32 KiB, head and tail kept), whether it is still running and its exit code.",
  schema: ProcessOutputArgsSchema,
  async execute(args, context): Promise<ProcessOutputResult> {
    const id = args.process_id;
    // The workspace agent cuts longer waits to its cap anyway; asking for more is not an error.
    const waitMs = Math.min(
      durationMsOr(args.wait_timeout, PROCESS_OUTPUT_DEFAULT_WAIT_MS),
      ProcessLimits.waitCapMs,
    );
    let answer: {
      output: string;
      truncated: Truncation | null;
      running: boolean;
      exit_code: number | null;
      group_running: boolean;
    };
    try {
      answer =
        waitMs === 0
          ? await context.processes.output(id, { signal: context.signal })
          : await context.processes.waitForExit(id, { timeoutMs: waitMs, signal: context.signal });
    } catch (error) {
      throw fromProcessError(error, `read the output of process ${id}`, context.signal);
    }
    const forModel = outputForModel(answer.output, answer.truncated);
    return {
      process_id: id,
      running: answer.running,
      exit_code: answer.exit_code,
      group_running: answer.group_running,
      output: forModel.output,
      truncated: forModel.truncated,
      note: processNote(id, answer, waitMs),
    };
  },
});

function processNote(
  id: string,
  state: { running: boolean; group_running: boolean },
  waitMs: number,
): string | null {
  if (state.running) {
    return `Process ${id} is still running${waitMs > 0 ? ` after waiting ${waitMs} ms` : ""}. Call process_output again to keep waiting, or process_signal to stop it.`;
  }
  if (state.group_running) {
    return `Process ${id} has exited, but processes it started still run. Call process_signal to stop them.`;
  }
  return null;
}

export const ProcessListArgsSchema = z.object({
  limit: z
    .number()
    .int()
    .min(1)
    .max(ProcessLimits.maxListLimit)
    .optional()
    .describe(`Most processes to list (default ${ProcessLimits.defaultListLimit}), running first.`),
});

export interface ProcessListResult {
  processes: {
    process_id: string;
    command: string;
    workdir: string;
    background: boolean;
    running: boolean;
    exit_code: number | null;
    /** Whether anything in the process's group still runs, e.g. what the command left behind. */
    group_running: boolean;
    started_at: string;
  }[];
}

export const processListTool = defineTool({
  name: "process_list",
  description:
    "List the processes this chat started with execute: running ones first, then the most recent.",
  schema: ProcessListArgsSchema,
  async execute(args, context): Promise<ProcessListResult> {
    try {
      const { processes } = await context.processes.list(
        args.limit === undefined ? {} : { limit: args.limit },
      );
      return {
        processes: processes.map((info) => ({
          process_id: info.id,
          command: info.command,
          workdir: info.workdir,
          background: info.background,
          running: info.running,
          exit_code: info.exit_code,
          group_running: info.group_running,
          started_at: new Date(info.started_at_unix * 1000).toISOString(),
        })),
      };
    } catch (error) {
      throw fromProcessError(error, "list processes", context.signal);
    }
  },
});

export const ProcessSignalArgsSchema = z.object({
  process_id: z.string().min(1).describe("Id of a process started by execute."),
  signal: z
    .enum(["terminate", "kill"])
    .describe(
      "terminate asks the process (and its children) to stop, killing them if they have not after a grace period; kill stops them at once.",
    ),
});

export const processSignalTool = defineTool({
  name: "process_signal",
  description:
    "Stop a process started by execute, with all its child processes, also those still running after the command itself exited.",
  schema: ProcessSignalArgsSchema,
  async execute(args, context): Promise<{ process_id: string; signal: string; sent: boolean }> {
    try {
      await context.processes.signal(args.process_id, args.signal);
      return { process_id: args.process_id, signal: args.signal, sent: true };
    } catch (error) {
      throw fromProcessError(error, `signal process ${args.process_id}`, context.signal);
    }
  },
});
