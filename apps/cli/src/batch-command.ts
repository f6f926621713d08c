import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { BatchSpec, ParseBatchSpecResult } from "@deckhand/batch-spec";
import type { Workspace } from "@deckhand/batches";
import { errorMessage } from "@deckhand/errors";
import type { BatchRuntimeChoice } from "@deckhand/wire";
import { WireEnv, WirePath } from "@deckhand/wire/no-schemas";
import { batchRunUsage, runtimeOf } from "./batch-run-arguments.ts";
import { unreadableFileReason } from "./unreadable-file.ts";
import { UsageError } from "./usage-error.ts";

export interface BatchCommandIo {
  /** Without `isTTY`, output meant for people (tables) becomes JSON lines. */
  stdout: { write(text: string): unknown; isTTY?: boolean; columns?: number; rows?: number };
  stderr: { write(text: string): unknown };
  /** Spec paths are resolved against this directory. */
  cwd: string;
  /** The environment (tokens, the data directory); this process's by default. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Ctrl-C and SIGTERM, which cancel a run; this process's signals by default. */
  onSignal?: (handler: (signal: "SIGINT" | "SIGTERM") => void) => () => void;
}

export const batchUsage = `Usage: deckhand batch <command> [options]

Commands:
  validate <spec>   check a batch spec (YAML or JSON): syntax, fields, version rules,
                    templates and mounts; lists every problem as file:line:column
  workspaces <spec> list the workspaces a spec would run in, before anything runs
  preview <spec>    run a spec's steps in every workspace and show the changesets
  apply <spec>      run a spec and write its changesets as branches
  rollout <name>    show a batch change's paced rollout: what waits, and when it goes out
  render <spec>     print the shell script a codingAgent step runs, secrets redacted
  schema            print the JSON Schema of batch specs, for editor completion

Run "deckhand batch <command> --help" for a command's options.
`;

const rolloutUsage = `Usage: deckhand batch rollout <name> [options]

Shows the rollout of the batch change <name> (its spec's name) on a running server: its pace
(the spec's rollout: and the server's rollout windows), whether it is publishing, waiting or
halted, and each pull request waiting to be opened with when it goes out.

Options:
  --server URL    the Deckhand server (default: http://127.0.0.1:7420, what "deckhand up" serves)
  --token TOKEN   the server's API token (default: $${WireEnv.adminToken})
  --json          print the API's answer as JSON
`;

const validateUsage = `Usage: deckhand batch validate <spec>

Checks a batch spec and prints "<spec>: OK" (exit 0), or every problem as
"file:line:column: field.path: message" (exit 1). Mount paths are checked against the
directory that holds the spec.
`;

const schemaUsage = `Usage: deckhand batch schema

Prints the JSON Schema of batch specs. Save it and point your editor at it, e.g. with
"# yaml-language-server: $schema=./batch-spec.schema.json" as a spec's first line.
`;

/** Placeholders for a preview render; the printed script says which values to pass instead. */
const placeholderVersion = "AGENT_VERSION";
const placeholderModel = "MODEL";

const renderUsage = `Usage: deckhand batch render <spec> --step N --repository NAME [options]

Prints the shell script a codingAgent step runs, with the prompt templated for one
repository and secrets redacted. Nothing is run.

Options:
  --step N                  the step, as in steps[N] (0 is the first step)
  --repository NAME         the repository the step runs in, e.g. github.com/acme/api
  --branch NAME             the repository branch templates see (default: empty)
  --model-provider-url URL  the model-provider proxy (default: $${WireEnv.modelProviderUrl},
                            else http://localhost${WirePath.modelProvider})
  --agent-version V         the agent version to install (default: the placeholder
                            ${placeholderVersion})
  --model M                 the model the agent asks for (default: the placeholder ${placeholderModel})
  --platform OS-ARCH        linux-x64 (default), linux-arm64, darwin-x64 or darwin-arm64
  --install-source SOURCE   release (default: the agent's release downloads) or npm
`;

const workspacesUsage = `Usage: deckhand batch workspaces <spec> [options]

Lists the workspaces the spec would run in, before anything runs: for each its repository,
branch, commit, path and the steps (as in steps[N]) that would run there. On a terminal it
prints a table; otherwise (or with --json) one JSON object a line: a "workspace" per
workspace, a "warning" per warning and a last "summary".

Options:
  --code-host DIR          a directory of repositories to search for this run (repeatable),
                           after the codeHosts of <data-dir>/config.json
  --data-dir DIR           where config.json and the clone cache live (default:
                           $${WireEnv.serverDataDir}, else ~/.deckhand)
  --force-override-ignore  ignore .batchignore files
  --runtime RUNTIME        the runtime the run will use, auto (default), local, container or
                           kubernetes:
                           where a step runs is part of its cache key, so the cached steps
                           shown are those a run with that runtime would find
  --json                   print JSON lines even on a terminal
`;

/**
 * The spec parser, loaded by the commands that read a spec here: `preview` and `apply` send the
 * spec's text to the server, which parses it, so their start-up need not load the parser and
 * its YAML library.
 */
function specTools(): Promise<typeof import("@deckhand/batch-spec")> {
  return import("@deckhand/batch-spec");
}

/** Reads and parses the spec at `path`; its mounts are checked against the spec's directory. */
async function parseSpecFile(path: string, io: BatchCommandIo): Promise<ParseBatchSpecResult> {
  const { BatchSpecError, parseBatchSpec } = await specTools();
  const absolute = resolve(io.cwd, path);
  let text: string;
  try {
    text = readFileSync(absolute, "utf8");
  } catch (error) {
    throw new BatchSpecError(
      "unreadable_spec",
      `cannot read ${path}: ${unreadableFileReason(error)}`,
      { cause: error },
    );
  }
  return parseBatchSpec(text, { file: path, specDirectory: dirname(absolute) });
}

function parse(
  argv: string[],
  options: Record<string, { type: "string" | "boolean"; multiple?: boolean }>,
): { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...options, help: { type: "boolean" } },
      allowPositionals: true,
      strict: true,
    });
    return {
      values: values as Record<string, string | boolean | string[] | undefined>,
      positionals,
    };
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
}

async function validate(argv: string[], io: BatchCommandIo): Promise<number> {
  const { values, positionals } = parse(argv, {});
  if (values.help) {
    io.stdout.write(validateUsage);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError("validate takes one spec file");
  const path = positionals[0]!;
  const { spec, diagnostics } = await parseSpecFile(path, io);
  if (spec === undefined) {
    const { formatDiagnostic } = await specTools();
    for (const diagnostic of diagnostics) io.stderr.write(`${formatDiagnostic(diagnostic)}\n`);
    io.stderr.write(
      `${path}: ${diagnostics.length} problem${diagnostics.length === 1 ? "" : "s"}\n`,
    );
    return 1;
  }
  const steps = spec.steps?.length ?? 0;
  io.stdout.write(
    `${path}: OK (version ${spec.version}, ${steps} step${steps === 1 ? "" : "s"})\n`,
  );
  return 0;
}

async function schema(argv: string[], io: BatchCommandIo): Promise<number> {
  const { values, positionals } = parse(argv, {});
  if (values.help) {
    io.stdout.write(schemaUsage);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError("schema takes no arguments");
  const { renderBatchSpecJsonSchema } = await specTools();
  io.stdout.write(renderBatchSpecJsonSchema());
  return 0;
}

function requiredString(
  values: Record<string, string | boolean | string[] | undefined>,
  name: string,
): string {
  const value = values[name];
  if (typeof value !== "string" || value === "") throw new UsageError(`--${name} is required`);
  return value;
}

async function render(
  argv: string[],
  io: BatchCommandIo,
  env: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  const { values, positionals } = parse(argv, {
    step: { type: "string" },
    repository: { type: "string" },
    branch: { type: "string" },
    "model-provider-url": { type: "string" },
    "agent-version": { type: "string" },
    model: { type: "string" },
    platform: { type: "string" },
    "install-source": { type: "string" },
  });
  if (values.help) {
    io.stdout.write(renderUsage);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError("render takes one spec file");
  const stepText = requiredString(values, "step");
  const repository = requiredString(values, "repository");
  if (!/^\d+$/.test(stepText))
    throw new UsageError(`--step must be a step index such as 0, got "${stepText}"`);
  const platformText = (values.platform as string | undefined) ?? "linux-x64";
  const [os, arch, ...extra] = platformText.split(/[-/]/);
  if (!os || !arch || extra.length > 0) {
    throw new UsageError(`--platform must look like linux-x64, got "${platformText}"`);
  }
  const installSourceName = (values["install-source"] as string | undefined) ?? "release";
  if (installSourceName !== "release" && installSourceName !== "npm") {
    throw new UsageError(`--install-source must be release or npm, got "${installSourceName}"`);
  }

  const path = positionals[0]!;
  const { spec, diagnostics } = await parseSpecFile(path, io);
  const { formatDiagnostic } = await specTools();
  if (spec === undefined) {
    for (const diagnostic of diagnostics) io.stderr.write(`${formatDiagnostic(diagnostic)}\n`);
    io.stderr.write(
      `${path}: fix these problems first; "deckhand batch validate" lists them too\n`,
    );
    return 1;
  }
  const version = (values["agent-version"] as string | undefined) ?? placeholderVersion;
  const model = (values.model as string | undefined) ?? placeholderModel;
  // The step is prepared as a run prepares it (@deckhand/batches), with placeholders for what
  // only a run has.
  const { previewCodingAgentScript } = await import("@deckhand/batches");
  const script = previewCodingAgentScript({
    spec,
    file: path,
    stepIndex: Number(stepText),
    repository: { name: repository, branch: (values.branch as string | undefined) ?? "" },
    version,
    model,
    platform: { os, arch },
    installSource: installSourceName,
    modelProviderUrl:
      (values["model-provider-url"] as string | undefined) ??
      env[WireEnv.modelProviderUrl] ??
      `http://localhost${WirePath.modelProvider}`,
  });
  if (version === placeholderVersion || model === placeholderModel) {
    io.stderr.write(
      `note: rendered with placeholders (${[
        version === placeholderVersion ? `version ${placeholderVersion}` : "",
        model === placeholderModel ? `model ${placeholderModel}` : "",
      ]
        .filter(Boolean)
        .join(", ")}); pass --agent-version and --model for a script that runs\n`,
    );
  }
  io.stdout.write(script.endsWith("\n") ? script : `${script}\n`);
  return 0;
}

function workspaceLine(workspace: Workspace, cachedSteps: number | null): Record<string, unknown> {
  return {
    type: "workspace",
    repository: workspace.repository.name,
    branch: workspace.branch,
    revision: workspace.revision,
    path: workspace.path,
    steps: workspace.steps.map((step) => step.index),
    only_fetch_workspace: workspace.onlyFetchWorkspace,
    search_result_paths: workspace.searchResultPaths,
    cached_steps: cachedSteps,
  };
}

/** "2/3 cached", "all cached", "-" (none), or "?" when the cache could not be read. */
function cachedCell(workspace: Workspace, cachedSteps: number | null): string {
  if (cachedSteps === null) return "?";
  if (cachedSteps === 0) return "-";
  if (cachedSteps === workspace.steps.length) return "all";
  return `${cachedSteps}/${workspace.steps.length}`;
}

function workspaceTable(
  workspaces: readonly Workspace[],
  cached: readonly (number | null)[],
): string {
  const rows = [
    ["REPOSITORY", "BRANCH", "REVISION", "PATH", "STEPS", "CACHED"],
    ...workspaces.map((workspace, index) => [
      workspace.repository.name,
      workspace.branch,
      workspace.revision.slice(0, 12),
      workspace.path === "" ? "." : workspace.path,
      workspace.steps.length === 0
        ? "-"
        : workspace.steps.map((step) => String(step.index)).join(","),
      cachedCell(workspace, cached[index] ?? null),
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join("  ")
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}

/**
 * How many steps of each workspace the step cache in the data directory's database would answer,
 * counted as a run would count them. The database is opened only when it exists and no server
 * holds it; otherwise the counts are unknown (null) and the note says why.
 */
async function cachedStepCountsOf(
  workspaces: readonly Workspace[],
  spec: BatchSpec,
  dataDir: string,
  specDirectory: string,
  runtime: BatchRuntimeChoice,
  env: NodeJS.ProcessEnv,
): Promise<{ counts: (number | null)[]; note: string | null }> {
  const unknown = (note: string | null) => ({ counts: workspaces.map(() => null), note });
  if (workspaces.length === 0) return unknown(null);
  if (!existsSync(join(dataDir, "db"))) {
    return { counts: workspaces.map(() => 0), note: null };
  }
  const { createDb, DataDirLockedError } = await import("@deckhand/db");
  const { batchDirectories, cachedStepCounts, DatabaseStepCache, ExecutionEnvironment } =
    await import("@deckhand/batches");
  let database: Awaited<ReturnType<typeof createDb>>;
  try {
    database = await createDb({ dataDir: join(dataDir, "db") });
  } catch (error) {
    if (error instanceof DataDirLockedError) {
      return unknown(
        `the step cache is not shown: deckhand process ${error.holder.pid} holds ${dataDir}; "deckhand batch preview --server" reads it through that server`,
      );
    }
    return unknown(`the step cache is not shown: ${errorMessage(error)}`);
  }
  try {
    const counts = await cachedStepCounts(workspaces, {
      spec,
      cache: new DatabaseStepCache(database.db),
      specDirectory,
      runtime,
      environment: new ExecutionEnvironment({
        directories: batchDirectories(dataDir),
        outerEnvironment: env,
      }),
    });
    return { counts, note: null };
  } finally {
    await database.close();
  }
}

async function workspaces(
  argv: string[],
  io: BatchCommandIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  const { values, positionals } = parse(argv, {
    "code-host": { type: "string", multiple: true },
    "data-dir": { type: "string" },
    "force-override-ignore": { type: "boolean" },
    runtime: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) {
    io.stdout.write(workspacesUsage);
    return 0;
  }
  const runtime = runtimeOf(values.runtime as string | undefined) ?? "auto";
  if (positionals.length !== 1) throw new UsageError("workspaces takes one spec file");
  const path = positionals[0]!;
  const { spec, diagnostics } = await parseSpecFile(path, io);
  if (spec === undefined) {
    const { formatDiagnostic } = await specTools();
    for (const diagnostic of diagnostics) io.stderr.write(`${formatDiagnostic(diagnostic)}\n`);
    io.stderr.write(
      `${path}: fix these problems first; "deckhand batch validate" lists them too\n`,
    );
    return 1;
  }
  const dataDir = resolve(
    io.cwd,
    (values["data-dir"] as string | undefined) ??
      env[WireEnv.serverDataDir] ??
      join(homedir(), ".deckhand"),
  );
  // Loaded here, not at the top: validate, render and schema never need git or the engine.
  const { configuredRepositories, readExecutorConfig } = await import("@deckhand/batches");
  // The code hosts of config.json, with its code host connections' tokens, as a run finds them.
  const repositories = configuredRepositories(await readExecutorConfig(dataDir), dataDir, env);
  const result = await repositories.workspaces(spec, {
    code_host_directories: ((values["code-host"] as string[] | undefined) ?? []).map((directory) =>
      resolve(io.cwd, directory),
    ),
    force_override_ignore: values["force-override-ignore"] === true,
  });
  const cached = await cachedStepCountsOf(
    result.workspaces,
    spec,
    dataDir,
    dirname(resolve(io.cwd, path)),
    runtime,
    env,
  );
  if (cached.note !== null) result.warnings.push(cached.note);
  if (values.json || !io.stdout.isTTY) {
    for (const [index, workspace] of result.workspaces.entries()) {
      io.stdout.write(
        `${JSON.stringify(workspaceLine(workspace, cached.counts[index] ?? null))}\n`,
      );
    }
    for (const message of result.warnings) {
      io.stdout.write(`${JSON.stringify({ type: "warning", message })}\n`);
    }
    io.stdout.write(
      `${JSON.stringify({ type: "summary", workspaces: result.workspaces.length })}\n`,
    );
    return 0;
  }
  for (const message of result.warnings) io.stderr.write(`warning: ${message}\n`);
  io.stdout.write(workspaceTable(result.workspaces, cached.counts));
  const count = result.workspaces.length;
  io.stdout.write(`${count} workspace${count === 1 ? "" : "s"}\n`);
  return 0;
}

/**
 * Runs `deckhand batch <argv...>` and returns its exit code: 0 on success, 1 when the spec or
 * the request is wrong, 2 for a usage error. Never throws and never prints a stack trace.
 */
export async function runBatchCommand(
  argv: string[],
  io: BatchCommandIo = { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() },
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "validate":
        return await validate(rest, io);
      case "render":
        return await render(rest, io, io.env ?? process.env);
      case "schema":
        return await schema(rest, io);
      case "workspaces":
        return await workspaces(rest, io, io.env ?? process.env);
      case "rollout": {
        const { runRolloutCommand } = await import("./batch-rollout-command.ts");
        const code = await runRolloutCommand(rest, {
          stdout: io.stdout,
          env: io.env ?? process.env,
        });
        if (code !== "help") return code;
        io.stdout.write(rolloutUsage);
        return 0;
      }
      case "preview":
      case "apply": {
        // Loaded here: the run client and, without --server, the whole server.
        const { processSignals, runBatchRunCommand } = await import("./batch-run-command.ts");
        return await runBatchRunCommand(command, rest, {
          stdout: io.stdout,
          stderr: io.stderr,
          cwd: io.cwd,
          env: io.env ?? process.env,
          onSignal: io.onSignal ?? processSignals,
        });
      }
      case undefined:
      case "help":
      case "--help":
      case "-h":
        io.stdout.write(batchUsage);
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`deckhand batch: ${error.message}\n\n${usageFor(command)}`);
      return 2;
    }
    const message = errorMessage(error);
    io.stderr.write(`deckhand batch ${command}: ${message}\n`);
    return 1;
  }
}

function usageFor(command: string | undefined): string {
  switch (command) {
    case "validate":
      return validateUsage;
    case "render":
      return renderUsage;
    case "schema":
      return schemaUsage;
    case "workspaces":
      return workspacesUsage;
    case "rollout":
      return rolloutUsage;
    case "preview":
    case "apply":
      return batchRunUsage(command);
    default:
      return batchUsage;
  }
}
