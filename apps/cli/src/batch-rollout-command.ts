// `deckhand batch rollout <name>`: a batch change's paced rollout as a server sees it — its pace,
// its state, and each pull request waiting to be opened with when it goes out.
import { parseArgs } from "node:util";
import { createServerClient, ServerApiError } from "@deckhand/server-client";
import { type BatchChangeRollout, WireEnv } from "@deckhand/wire";
import { table } from "./batch-run-output.ts";
import type { ViewOutput } from "./batch-run-view.ts";
import { UsageError } from "./usage-error.ts";

const DEFAULT_SERVER = "http://127.0.0.1:7420";

/** `in 6 min`, `in 3 h`, `now`; the time itself follows in the table. */
function inHowLong(iso: string, now: number): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (seconds < 30) return "now";
  if (seconds < 3_600) return `in ${Math.round(seconds / 60)} min`;
  if (seconds < 48 * 3_600) return `in ${Math.round(seconds / 3_600)} h`;
  return `in ${Math.round(seconds / 86_400)} days`;
}

/** The rollout as lines of text. */
export function rolloutText(rollout: BatchChangeRollout, now: number): string[] {
  const lines = [
    `${rollout.name}: ${rollout.state}, ${rollout.pending.length} waiting, ${rollout.open} open, ${rollout.published_last_hour} opened in the last hour`,
  ];
  if (!rollout.paced) lines.push("not paced: pull requests are opened as fast as the hosts allow");
  const spec = rollout.settings.spec;
  const pace = [
    spec?.hourlyLimit === undefined ? null : `${spec.hourlyLimit} per hour`,
    spec?.concurrentLimit === undefined ? null : `${spec.concurrentLimit} open at once`,
    spec?.canary === undefined ? null : `${spec.canary.count} canary first`,
    spec?.windows === undefined ? null : `${spec.windows.length} window(s) of the spec`,
    rollout.settings.server_windows === null
      ? null
      : `${rollout.settings.server_windows.length} server window(s)`,
  ].filter((part): part is string => part !== null);
  if (pace.length > 0) lines.push(`pace: ${pace.join(", ")}`);
  if (rollout.canary !== null) {
    lines.push(
      `canary: ${rollout.canary.passed} of ${rollout.canary.count} passed${rollout.canary.failing.length > 0 ? `, failing: ${rollout.canary.failing.join(", ")}` : ""}`,
    );
  }
  if (rollout.reason !== null) lines.push(rollout.reason);
  if (rollout.next_at !== null) {
    lines.push(`next: ${inHowLong(rollout.next_at, now)} (${rollout.next_at})`);
  }
  if (rollout.pending.length > 0) {
    lines.push(
      "",
      ...table([
        ["REPOSITORY", "BRANCH", "GOES OUT", "WAITING FOR"],
        ...rollout.pending.map((item) => [
          `${item.repository}${item.canary ? " (canary)" : ""}`,
          item.branch,
          item.at === null ? "-" : `${inHowLong(item.at, now)} (${item.at})`,
          item.detail,
        ]),
      ]),
    );
  }
  return lines;
}

export async function runRolloutCommand(
  argv: string[],
  io: {
    stdout: ViewOutput;
    env: Readonly<Record<string, string | undefined>>;
    now?: () => number;
    fetch?: typeof fetch;
  },
): Promise<number | "help"> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  // The caller prints the usage (batch-command.ts keeps every batch command's).
  if (parsed.values.help) return "help";
  if (parsed.positionals.length !== 1) throw new UsageError("rollout takes one batch change name");
  const server = parsed.values.server ?? DEFAULT_SERVER;
  if (!/^https?:\/\/[^/]/.test(server)) {
    throw new UsageError(
      `--server must be an http(s) URL such as ${DEFAULT_SERVER}, got "${server}"`,
    );
  }
  const client = createServerClient({
    baseUrl: server,
    token: parsed.values.token || io.env[WireEnv.adminToken] || null,
    ...(io.fetch ? { fetch: io.fetch } : {}),
  });
  const rollout = await client
    .getBatchChangeRollout({ params: { name: parsed.positionals[0]! } })
    .catch((error: unknown) => {
      if (ServerApiError.isInstance(error) && error.status === 0) {
        throw new Error(`${error.message}; start it with "deckhand up", or pass --server`);
      }
      throw error;
    });
  if (parsed.values.json) {
    io.stdout.write(`${JSON.stringify(rollout)}\n`);
    return 0;
  }
  for (const line of rolloutText(rollout, (io.now ?? Date.now)())) io.stdout.write(`${line}\n`);
  return 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      server: { type: "string" },
      token: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}
