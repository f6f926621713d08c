// The command line of `deckhand batch preview|apply`, turned into a run request's options and
// where the run happens (a server named by --server, or one started in this process).
import { availableParallelism } from "node:os";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { BatchRunAction, BatchRunOptions, BatchRuntimeChoice } from "@deckhand/wire";
import { batchRuntimeChoices, WireEnv } from "@deckhand/wire/no-schemas";
import { UsageError } from "./usage-error.ts";

/** The most a workspace's timeout may be, as the API accepts it (`timeout_ms`). */
const MAX_TIMEOUT_MS = 7 * 24 * 3_600_000;
const MIN_TIMEOUT_MS = 1_000;
const MAX_PARALLELISM = 1_024;

export function batchRunUsage(action: BatchRunAction): string {
  const what =
    action === "preview"
      ? `Runs a batch spec's steps in every workspace it names and prints the changesets they
produce (branch, title, diff). Nothing is committed or pushed: "deckhand batch apply" does that.`
      : `Runs a batch spec like "deckhand batch preview", then writes each changeset as a branch with
one commit in its repository, keeping commits a person added on the branch since (--rebase,
the default) or refusing to touch such a branch (--refuse).`;
  const applyOptions =
    action === "apply"
      ? `  --push                   also push each branch to its repository's origin (a git URL
                           host's branches are pushed without it; a working copy's are not)
  --rebase                 replay a person's commits on the branch onto the new commit
                           (the default)
  --refuse                 fail a changeset whose branch has a person's commits instead
  --publish-rate N         pull request changes sent to each code host per minute (default:
                           the connection's publishRate, else 30)
  --delete-branches        delete the branch of each pull request closed because the spec
                           no longer produces it
`
      : "";
  return `Usage: deckhand batch ${action} <spec> [options]

${what}

Without --server it starts Deckhand's server in this process on the data directory (its
embedded database keeps the step cache, so a second run of the same spec runs no step); with
--server URL it runs the spec on that server. On a terminal it shows the run's progress, then a
table of changesets; otherwise (or with --json) it prints one JSON object a line (see
docs/batch-changes.md).

Exit status: 0 when every workspace succeeded${action === "apply" ? " and every changeset was applied" : ""}; 1 when one
failed or the spec is invalid; 2 for bad usage; 130 after Ctrl-C, which cancels the run.

Options:
  --code-host DIR          a directory of repositories to search for this run (repeatable),
                           after the codeHosts of <data-dir>/config.json
  --runtime RUNTIME        auto (default: a container when the step names an image and Podman
                           or Docker works, else this machine), local, container or kubernetes
                           (each step that names an image as a Job in the cluster config.json's
                           kubernetes names)
  -j, --parallelism N      run at most N workspaces at once (default: the number of CPUs)
  --timeout DURATION       each workspace's time limit, e.g. 30m, 2h or 90s (default 60m)
  --clear-cache            run every step, ignoring and replacing cached results
  --skip-errors            keep the other workspaces' changesets when one fails${action === "apply" ? " (and apply\n                           them)" : ""}
  --fail-fast              cancel the workspaces not yet finished when one fails
  --keep-logs              keep each workspace's checkout and step logs after it finished
  --force-override-ignore  include repositories that have a .batchignore
${applyOptions}  --json                   print JSON lines even on a terminal
  --server URL             run on the Deckhand server at URL instead of in this process
  --token TOKEN            the server's API token (default: $${WireEnv.adminToken})
  --data-dir DIR           the data directory of the server started in this process (default:
                           $${WireEnv.serverDataDir}, else ~/.deckhand)
`;
}

/** Where the run happens. */
export type BatchRunTarget =
  | { kind: "server"; url: string; token: string | null }
  | { kind: "embedded"; dataDir: string | undefined; concurrency: number };

export interface BatchRunArguments {
  action: BatchRunAction;
  /** The spec's path as given: diagnostics name it so. */
  specPath: string;
  /** The spec's absolute path; its directory is the run's spec_directory. */
  specFile: string;
  json: boolean;
  target: BatchRunTarget;
  options: BatchRunOptions;
}

const DURATION_TERM = /^(\d+(?:\.\d+)?)(ms|s|m|h)/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * A duration as src-cli's `-timeout` takes it (Go's notation without its sub-millisecond units):
 * `90s`, `30m`, `2h`, `1h30m`, `1.5h`, in milliseconds; null when the text is not one.
 */
export function parseDuration(text: string): number | null {
  let rest = text.trim();
  if (rest === "") return null;
  let total = 0;
  while (rest !== "") {
    const match = DURATION_TERM.exec(rest);
    if (match === null) return null;
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
    rest = rest.slice(match[0].length);
  }
  return Number.isFinite(total) ? Math.round(total) : null;
}

/** `--runtime`: auto, local, container or kubernetes (undefined when not given). */
export function runtimeOf(text: string | undefined): BatchRuntimeChoice | undefined {
  if (text === undefined) return undefined;
  // The schema's own choices, checked without building the schema before the run's request.
  const choice = batchRuntimeChoices.find((candidate) => candidate === text);
  if (choice === undefined) {
    throw new UsageError(`--runtime must be auto, local, container or kubernetes, got "${text}"`);
  }
  return choice;
}

function timeoutOf(text: string): number {
  const ms = parseDuration(text);
  if (ms === null) {
    throw new UsageError(
      `--timeout must be a duration such as 30m, 2h or 90s (units ms, s, m, h), got "${text}"`,
    );
  }
  if (ms < MIN_TIMEOUT_MS || ms > MAX_TIMEOUT_MS) {
    throw new UsageError(`--timeout must be between 1s and 168h, got "${text}"`);
  }
  return ms;
}

function parallelismOf(text: string): number {
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_PARALLELISM) {
    throw new UsageError(
      `-j must be a number of workspaces from 1 to ${MAX_PARALLELISM}, got "${text}"`,
    );
  }
  return Number(text);
}

function serverUrlOf(text: string): string {
  if (!/^https?:\/\/[^/]/.test(text)) {
    throw new UsageError(
      `--server must be an http(s) URL such as http://127.0.0.1:7420, got "${text}"`,
    );
  }
  return text.replace(/\/+$/, "");
}

export interface BatchRunArgumentContext {
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  /** The default of -j; the machine's CPU count unless a test says otherwise. */
  cpuCount?: number;
}

/**
 * Parses `deckhand batch preview|apply` arguments; `null` means --help was asked for. Bad usage
 * is a UsageError saying what is wrong.
 */
export function parseBatchRunArguments(
  action: BatchRunAction,
  argv: string[],
  context: BatchRunArgumentContext,
): BatchRunArguments | null {
  let parsed: ReturnType<typeof parseOwn>;
  try {
    parsed = parseOwn(action, argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return null;
  if (positionals.length !== 1) throw new UsageError(`${action} takes one spec file`);
  const specPath = positionals[0]!;

  const runtime = runtimeOf(values.runtime);
  if (values.rebase && values.refuse) {
    throw new UsageError("--rebase and --refuse exclude each other; pass one");
  }
  if (values.server !== undefined && values["data-dir"] !== undefined) {
    throw new UsageError(
      "--data-dir is for the server this command starts; with --server the server uses its own",
    );
  }
  if (values.token !== undefined && values.server === undefined) {
    throw new UsageError("--token is for --server; the server this command starts needs none");
  }
  const parallelism =
    values.parallelism === undefined ? undefined : parallelismOf(values.parallelism);

  const target: BatchRunTarget =
    values.server !== undefined
      ? {
          kind: "server",
          url: serverUrlOf(values.server),
          token: values.token || context.env[WireEnv.adminToken] || null,
        }
      : {
          kind: "embedded",
          dataDir:
            values["data-dir"] === undefined ? undefined : resolve(context.cwd, values["data-dir"]),
          concurrency: parallelism ?? context.cpuCount ?? availableParallelism(),
        };

  const options: BatchRunOptions = {};
  const codeHosts = values["code-host"] ?? [];
  if (codeHosts.length > 0) {
    options.code_host_directories = codeHosts.map((directory) => resolve(context.cwd, directory));
  }
  if (runtime !== undefined) options.runtime = runtime;
  // A server's own executors decide how much runs at once unless -j says; in this process the
  // embedded worker runs -j (by default one a CPU) and the run asks for as many lanes.
  if (target.kind === "embedded") options.parallelism = target.concurrency;
  else if (parallelism !== undefined) options.parallelism = parallelism;
  if (values.timeout !== undefined) options.timeout_ms = timeoutOf(values.timeout);
  if (values["clear-cache"]) options.clear_cache = true;
  if (values["skip-errors"]) options.skip_errors = true;
  if (values["fail-fast"]) options.fail_fast = true;
  if (values["keep-logs"]) options.keep_logs = true;
  if (values["force-override-ignore"]) options.force_override_ignore = true;
  if (values.push) options.push = true;
  if (values.rebase) options.on_conflict = "rebase";
  if (values.refuse) options.on_conflict = "refuse";
  if (values["delete-branches"]) options.delete_branches = true;
  if (values["publish-rate"] !== undefined) {
    const rate = Number(values["publish-rate"]);
    if (!Number.isFinite(rate) || rate <= 0 || rate > 6_000) {
      throw new UsageError(
        `--publish-rate must be a number of changes per minute above 0 and at most 6000, not "${values["publish-rate"]}"`,
      );
    }
    options.publish_rate = rate;
  }

  const specFile = resolve(context.cwd, specPath);
  return {
    action,
    specPath,
    specFile,
    json: values.json ?? false,
    target,
    options,
  };
}

function parseOwn(action: BatchRunAction, argv: string[]) {
  const common = {
    "code-host": { type: "string", multiple: true },
    runtime: { type: "string" },
    parallelism: { type: "string", short: "j" },
    timeout: { type: "string" },
    "clear-cache": { type: "boolean" },
    "skip-errors": { type: "boolean" },
    "fail-fast": { type: "boolean" },
    "keep-logs": { type: "boolean" },
    "force-override-ignore": { type: "boolean" },
    json: { type: "boolean" },
    server: { type: "string" },
    token: { type: "string" },
    "data-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  } as const;
  const apply = {
    push: { type: "boolean" },
    rebase: { type: "boolean" },
    refuse: { type: "boolean" },
    "publish-rate": { type: "string" },
    "delete-branches": { type: "boolean" },
  } as const;
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...common, ...apply },
    allowPositionals: true,
    strict: true,
  });
  // One parser for both, so the values are typed alike; preview refuses apply's options as
  // parseArgs refuses any unknown one.
  if (action === "preview") {
    for (const name of Object.keys(apply)) {
      if (values[name as keyof typeof apply] !== undefined) {
        throw new Error(`Unknown option '--${name}' (it is an option of "deckhand batch apply")`);
      }
    }
  }
  return { values, positionals };
}

/** The spec's directory: `mount:` paths are relative to it. */
export function specDirectoryOf(parsed: BatchRunArguments): string {
  return dirname(parsed.specFile);
}
