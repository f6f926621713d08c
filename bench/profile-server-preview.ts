// Where a `deckhand batch preview --server` run (1 repository × 1 sed step) on a running
// `deckhand up` spends its time, both sides on one clock: the server and the CLI run with the
// trace preload (bench/support/trace-preload.ts), and each cached run is laid out as a timeline
// from the CLI's spawn: the CLI's requests (sent, answered), the server's requests served and
// the SQL statements it sent meanwhile, the CLI's stdout lines, its exit; with the CPU of the CLI
// process (GNU time) and of the server over the run (`/proc`). Not part of `npm run bench`: a
// tool for finding the time, not a figure. With DATABASE_URL set, `deckhand up` runs on a
// PostgreSQL database of its own.
//
// --bundled runs the bundled bin users install (apps/cli/dist, built beforehand) instead of the
// sources; --cpu-prof DIR writes the CLI's CPU profiles there.
//
//   node --conditions=source bench/profile-server-preview.ts [--bundled] [--rounds 3] [--cpu-prof DIR]
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { createPostgresTestDatabase, type PostgresTestDatabase } from "@deckhand/testkit";
import {
  bundledCliEntry,
  type CliRun,
  cleanEnvironment,
  createRepository,
  expectSuccess,
  runCli,
  startDeckhandUp,
  stopService,
} from "./support/deckhand-process.ts";
import { databaseUrlFromEnvironment, loadAverage, median, round } from "./support/figures.ts";
import { writeSedSpec } from "./support/sed-spec.ts";

const { values } = parseArgs({
  options: {
    bundled: { type: "boolean", default: false },
    rounds: { type: "string", default: "3" },
    "cpu-prof": { type: "string" },
    // Without the trace preload in the CLI (its own CPU then counts alone; no request times).
    "untraced-cli": { type: "boolean", default: false },
  },
});
const rounds = Number(values.rounds);
const preload = fileURLToPath(new URL("./support/trace-preload.ts", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "deckhand-profile-server-preview-"));
const code = join(scratch, "code");
createRepository(join(code, "github.com/acme/one"), { "README.md": "# one\n\nThe old way.\n" });
const dataDir = mkdtempSync(join(scratch, "data-"));
writeFileSync(
  join(dataDir, "config.json"),
  JSON.stringify({ codeHosts: [{ type: "directory", path: code }] }),
);

interface TraceEntry {
  kind: string;
  t?: number;
  ms?: number | null;
  text?: string;
  method?: string;
  url?: string;
  timeOrigin?: number;
  cpu?: { user: number; system: number };
}

function readTrace(file: string): { origin: number; entries: TraceEntry[] } {
  const entries = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as TraceEntry);
  const origin = entries.find((entry) => entry.kind === "process")?.timeOrigin ?? 0;
  return { origin, entries };
}

/** Server CPU (user + system, ms) from /proc: clock ticks of 10 ms. */
function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

interface Measured {
  run: CliRun;
  startedAt: number;
  traceFile: string;
  serverCpuMs: number;
}

const databaseUrl = databaseUrlFromEnvironment();
let database: PostgresTestDatabase | null = null;
const traceDirectory = join(scratch, "traces");
const serverTrace = join(scratch, "server-%p.jsonl");
try {
  if (databaseUrl !== undefined) database = await createPostgresTestDatabase(databaseUrl);
  const environment = cleanEnvironment({
    DECKHAND_TRACE_FILE: serverTrace,
    ...(database !== null ? { DATABASE_URL: database.url } : {}),
  });
  const server = await startDeckhandUp(dataDir, environment, ["--import", preload]);
  const serverPid = server.child.pid!;
  const measured: Measured[] = [];
  try {
    const once = async (spec: string, label: string): Promise<Measured> => {
      const traceFile = join(scratch, `cli-${label}.jsonl`);
      const nodeArgs = values["untraced-cli"] ? [] : ["--import", preload];
      if (values["cpu-prof"] !== undefined) {
        nodeArgs.push(
          "--cpu-prof",
          "--cpu-prof-dir",
          values["cpu-prof"],
          "--cpu-prof-name",
          `${label}.cpuprofile`,
        );
      }
      const before = processCpuMs(serverPid);
      const startedAt = performance.timeOrigin + performance.now();
      const run = expectSuccess(
        await runCli(["batch", "preview", spec, "--server", server.url, "--runtime", "local"], {
          cwd: scratch,
          env: cleanEnvironment({ DECKHAND_TRACE_FILE: traceFile }),
          nodeArgs,
          ...(values.bundled ? { entry: bundledCliEntry } : {}),
        }),
        "batch preview --server",
      );
      return { run, startedAt, traceFile, serverCpuMs: processCpuMs(serverPid) - before };
    };
    await once(writeSedSpec(scratch, "warm"), "warm");
    for (let index = 0; index < rounds; index += 1) {
      const spec = writeSedSpec(scratch, `r${index}`);
      await once(spec, `cold-${index}`);
      measured.push(await once(spec, `cached-${index}`));
    }
  } finally {
    await stopService(server);
  }
  const serverFile = readdirSync(scratch).find((name) => name.startsWith("server-"));
  const serverSide = readTrace(join(scratch, serverFile!));
  console.log(
    `batch preview --server, cached, ${values.bundled ? "bundled" : "sources"}, ${database !== null ? "PostgreSQL" : "PGlite"}, ${rounds} rounds, load average ${loadAverage()}`,
  );
  for (const { run, startedAt, traceFile, serverCpuMs } of measured) {
    const cliSide = values["untraced-cli"] ? { origin: 0, entries: [] } : readTrace(traceFile);
    const at = (origin: number, t: number | undefined) => round(origin + (t ?? 0) - startedAt, 1);
    const events: [number, string][] = [];
    for (const entry of cliSide.entries) {
      if (entry.kind === "http-out") {
        events.push([
          at(cliSide.origin, entry.t),
          `CLI sends ${entry.method} ${entry.url} (answered in ${entry.ms} ms)`,
        ]);
      }
    }
    const end = startedAt + run.ms;
    for (const entry of serverSide.entries) {
      const absolute = serverSide.origin + (entry.t ?? 0);
      if (absolute < startedAt || absolute > end) continue;
      if (entry.kind === "http-in") {
        events.push([
          at(serverSide.origin, entry.t),
          `server serves ${entry.method} ${entry.url} in ${entry.ms} ms`,
        ]);
      } else if (entry.kind === "sql") {
        events.push([
          at(serverSide.origin, entry.t),
          `  sql ${entry.ms} ms: ${String(entry.text).replace(/\s+/g, " ").slice(0, 110)}`,
        ]);
      } else if (entry.kind === "spawn") {
        events.push([
          at(serverSide.origin, entry.t),
          `  server spawns ${JSON.stringify(entry).slice(0, 110)}`,
        ]);
      }
    }
    for (const line of run.lines) {
      events.push([
        round(line.at, 1),
        `CLI prints ${String(line.json?.type ?? line.text.slice(0, 40))}`,
      ]);
    }
    const summary = cliSide.entries.find((entry) => entry.kind === "summary");
    events.push([round(run.ms, 1), "CLI exited"]);
    events.sort((a, b) => a[0] - b[0]);
    const statements = events.filter(([, text]) => text.startsWith("  sql")).length;
    console.log(
      `\nwall ${round(run.ms, 0)} ms; CLI CPU ${run.cpuMs} ms (its own count: ${summary?.cpu ? round((summary.cpu.user + summary.cpu.system) / 1000, 0) : "?"} ms); server CPU ${serverCpuMs} ms; ${statements} statements`,
    );
    for (const [time, text] of events) console.log(`${String(time).padStart(8)}  ${text}`);
  }
  console.log(
    `\nmedians: wall ${round(median(measured.map((m) => m.run.ms)), 0)} ms, CLI CPU ${median(measured.map((m) => m.run.cpuMs ?? Number.NaN))} ms, server CPU ${median(measured.map((m) => m.serverCpuMs))} ms`,
  );
} finally {
  await database?.drop();
  rmSync(traceDirectory, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
}
