// `deckhand batch preview|apply <spec>`: composition only. The spec goes to a batch-run API (a
// server's, named by --server, or the batch engine started in this process), the run's events
// are followed to its end and shown; the work itself is @deckhand/batches'.
import { readFileSync } from "node:fs";
import { errorMessage } from "@deckhand/errors";
import { ServerApiError } from "@deckhand/server-client";
import type { BatchRun, BatchRunAction, CreateBatchRunRequest } from "@deckhand/wire";
import {
  type BatchRunArguments,
  batchRunUsage,
  parseBatchRunArguments,
  specDirectoryOf,
} from "./batch-run-arguments.ts";
import { RunStreamLostError } from "./batch-run-follow.ts";
import { RunProgress, type RunSummary, runErrorText } from "./batch-run-output.ts";
import { type RunTarget, serverTarget } from "./batch-run-target.ts";
import { JsonLinesView, type RunView, TerminalView, type ViewOutput } from "./batch-run-view.ts";
import { runSpendLine } from "./spend-output.ts";
import { unreadableFileReason } from "./unreadable-file.ts";

export type StopSignal = "SIGINT" | "SIGTERM";

export interface BatchRunIo {
  stdout: ViewOutput;
  stderr: ViewOutput;
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** Calls `handler` on each Ctrl-C (SIGINT) or SIGTERM until the returned function is called. */
  onSignal(handler: (signal: StopSignal) => void): () => void;
  now?: () => number;
}

const SIGNAL_EXIT: Record<StopSignal, number> = { SIGINT: 130, SIGTERM: 143 };
/** How long a cancelled run has to report its end before the command stops waiting. */
const CANCEL_WAIT_MS = 15_000;
/** How often the run's model spend is read while it runs. */
const SPEND_POLL_MS = 5_000;

/**
 * Reads the run's spend now and every few seconds into the view; stopping reads it once more.
 * A server without the spend route (an older one) just shows none.
 */
function followSpend(target: RunTarget, runId: string, view: RunView): () => Promise<void> {
  const read = () =>
    target.runSpend(runId).then(
      (report) => view.spend(runSpendLine(report)),
      () => {},
    );
  void read();
  const timer = setInterval(() => void read(), SPEND_POLL_MS);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await read();
  };
}

/** Signals of this process; a third one exits at once, however far the cancel got. */
export function processSignals(handler: (signal: StopSignal) => void): () => void {
  let count = 0;
  const listener = (signal: StopSignal) => {
    count += 1;
    if (count >= 3) process.exit(SIGNAL_EXIT[signal]);
    handler(signal);
  };
  process.on("SIGINT", listener);
  process.on("SIGTERM", listener);
  return () => {
    process.off("SIGINT", listener);
    process.off("SIGTERM", listener);
  };
}

function readSpec(parsed: BatchRunArguments): string {
  try {
    return readFileSync(parsed.specFile, "utf8");
  } catch (error) {
    throw new CommandError(`cannot read ${parsed.specPath}: ${unreadableFileReason(error)}`);
  }
}

/** A failure the command reports in one message and exits 1 for. */
class CommandError extends Error {}

async function connect(parsed: BatchRunArguments, io: BatchRunIo): Promise<RunTarget> {
  if (parsed.target.kind === "server") {
    return serverTarget(parsed.target.url, parsed.target.token);
  }
  // Loaded only here: the engine, the database and PGlite are for runs without --server.
  const embedded = await import("./embedded-runner.ts");
  try {
    return await embedded.startEmbeddedRunner({
      dataDir: parsed.target.dataDir,
      concurrency: parsed.target.concurrency,
      env: io.env,
      cwd: io.cwd,
    });
  } catch (error) {
    if (error instanceof embedded.DataDirInUseError) {
      throw new CommandError(
        `${error.message.replace(/; stop that process.*$/, "")}. Is "deckhand up" running there? Run the spec on it with --server (e.g. --server http://127.0.0.1:7420), or pass another --data-dir`,
      );
    }
    if (error instanceof embedded.EmbeddedRunnerConfigError) throw new CommandError(error.message);
    throw error;
  }
}

/** Turns the server's refusal into what the person at the terminal should read. */
function explain(error: ServerApiError, parsed: BatchRunArguments, io: BatchRunIo): string {
  if (error.status === 0 && error.code === "unreachable") {
    return `${error.message}; start it with "deckhand up", or leave out --server to run the spec in this process`;
  }
  if (error.status === 401) {
    return `${error.message}: the server at ${parsed.target.kind === "server" ? parsed.target.url : "?"} wants an API token; pass --token or set DECKHAND_ADMIN_TOKEN`;
  }
  const invalid = /^.* is invalid:\n/.exec(error.message);
  if (error.status === 400 && invalid !== null) {
    // The located diagnostics, one a line, as `deckhand batch validate` prints them.
    const diagnostics = error.message.slice(invalid[0].length).split("\n");
    io.stderr.write(`${diagnostics.join("\n")}\n`);
    return `${parsed.specPath}: ${diagnostics.length} problem${diagnostics.length === 1 ? "" : "s"}`;
  }
  return error.message;
}

/**
 * Runs `deckhand batch preview|apply <argv...>` and returns its exit code: 0 when every workspace
 * succeeded (and, for apply, every changeset was applied), 1 when one failed or the spec or the
 * request is wrong, 2 for bad usage (a UsageError, which the caller reports), 128 + the signal
 * after Ctrl-C or SIGTERM, which cancel the run.
 */
export async function runBatchRunCommand(
  action: BatchRunAction,
  argv: string[],
  io: BatchRunIo,
): Promise<number> {
  const parsed = parseBatchRunArguments(action, argv, { cwd: io.cwd, env: io.env });
  if (parsed === null) {
    io.stdout.write(batchRunUsage(action));
    return 0;
  }
  const now = io.now ?? Date.now;
  let startedAt = now();
  // Set from signal handlers, so kept in an object TypeScript does not narrow.
  const state: { interrupted: StopSignal | null } = { interrupted: null };
  let target: RunTarget | null = null;
  let run: BatchRun | null = null;
  let view: RunView | null = null;
  const stopWaiting = new AbortController();
  const cancel = () => {
    if (target === null || run === null) return;
    target.cancelRun(run.id).catch((error: unknown) => {
      io.stderr.write(`deckhand batch ${action}: cancelling failed: ${errorMessage(error)}\n`);
      stopWaiting.abort();
    });
    // A run that does not report its end in time is left to the server.
    setTimeout(() => stopWaiting.abort(), CANCEL_WAIT_MS).unref();
  };
  const offSignal = io.onSignal((signal) => {
    if (state.interrupted !== null) {
      stopWaiting.abort();
      return;
    }
    state.interrupted = signal;
    (view ?? { note: (text: string) => io.stderr.write(`${text}\n`) }).note(
      "Cancelling the run… (press Ctrl-C again to stop waiting for it)",
    );
    cancel();
  });

  try {
    const source = readSpec(parsed);
    target = await connect(parsed, io);
    if (state.interrupted !== null) return SIGNAL_EXIT[state.interrupted];
    const request: CreateBatchRunRequest = {
      source,
      file: parsed.specPath,
      spec_directory: specDirectoryOf(parsed),
      action,
      options: parsed.options,
    };
    run = await target.createRun(request);
    // The run's own time, without starting a server in this process.
    startedAt = now();
    view =
      parsed.json || !io.stdout.isTTY
        ? new JsonLinesView(io.stdout, io.stderr)
        : new TerminalView({
            stdout: io.stdout,
            stderr: io.stderr,
            title: `${action} ${parsed.specPath}`,
            action,
            now,
            noteRuntimeFallback: parsed.options.runtime !== "local",
          });
    view.started(run);
    if (state.interrupted !== null) cancel();
    const progress = new RunProgress();
    const shown = view;
    // JSON lines carry no spend (their readers ask the API): reading it for them would only
    // add requests, one of them between the run's end and the summary.
    const stopSpend = shown.wantsSpend ? followSpend(target, run.id, shown) : async () => {};
    try {
      await target.follow(run.id, {
        signal: stopWaiting.signal,
        onEvent: (event) => {
          progress.apply(event.event);
          shown.event(event);
        },
      });
    } catch (error) {
      await stopSpend();
      shown.stop();
      throw error;
    }
    await stopSpend();
    const finished = progress.finished;
    const summary: RunSummary =
      finished !== null
        ? { ...finished.summary, status: finished.status }
        : progress.summary(state.interrupted !== null ? "cancelled" : "failed");
    if (action === "apply") {
      summary.applied = progress.applied.length;
      summary.apply_failed = progress.applyFailed.length;
    }
    const runId = run.id;
    const changesets = shown.wantsChangesets
      ? await target.changesets(runId).catch(() => undefined)
      : undefined;
    shown.finished({
      summary,
      error: runErrorText(finished, action),
      elapsedMs: now() - startedAt,
      ...(changesets !== undefined ? { changesets } : {}),
    });
    if (parsed.options.keep_logs && target.dataDir !== null && !parsed.json) {
      io.stderr.write(`Checkouts and logs are kept in ${target.dataDir}/workspaces/batches\n`);
    }
    if (state.interrupted !== null) return SIGNAL_EXIT[state.interrupted];
    const succeeded =
      finished !== null &&
      finished.status === "completed" &&
      finished.summary.failed === 0 &&
      (action !== "apply" || progress.applyFailed.length === 0);
    return succeeded ? 0 : 1;
  } catch (error) {
    view?.stop();
    if (state.interrupted !== null && run === null) return SIGNAL_EXIT[state.interrupted];
    if (error instanceof ServerApiError || error instanceof RunStreamLostError) {
      const message = error instanceof ServerApiError ? explain(error, parsed, io) : error.message;
      io.stderr.write(`deckhand batch ${action}: ${message}\n`);
      return state.interrupted !== null ? SIGNAL_EXIT[state.interrupted] : 1;
    }
    if (error instanceof CommandError) {
      io.stderr.write(`deckhand batch ${action}: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    offSignal();
    await target?.close();
  }
}
