// Helpers shared by this package's tests; not part of the public API.
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ScriptedAgentMode,
  scriptedAcpAgentCommand,
  scriptedAcpAgentPath,
} from "@deckhand/testkit";
import { MemoryProbeStore } from "../src/probe-store.ts";
import {
  createProviderService,
  type ProviderService,
  type ProviderServiceOptions,
} from "../src/provider-service.ts";

/**
 * The start bounds of an agent a test expects to answer: a deadline to catch a hang, not a
 * measure of speed. A scripted agent is a Node process that strips its TypeScript and loads the
 * ACP SDK; on a 2-core machine kept busy by other jobs that took longer than 4 s, and the probe
 * ended a normal agent as an error. Tests of the bounds themselves give hanging agents their own.
 */
export const ANSWERING_AGENT_START_MS = 60_000;

const directories = new Set<string>();
const services = new Set<ProviderService>();

/** A fresh directory (its real path), removed by `cleanUp`. */
export function temporaryDirectory(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-providers-")));
  directories.add(directory);
  return directory;
}

/**
 * A service over a config file in a fresh directory, with an empty PATH so that agent CLIs
 * installed on the test machine cannot change what the built-ins look like.
 */
export function createTestService(
  options: Partial<ProviderServiceOptions> = {},
): ProviderService & { configPath: string; store: MemoryProbeStore } {
  const directory = temporaryDirectory();
  const store = (options.probeStore as MemoryProbeStore | undefined) ?? new MemoryProbeStore();
  const configPath = options.configPath ?? join(directory, "providers.json");
  const service = createProviderService({
    modelUpstreamConfigured: true,
    env: { PATH: join(directory, "empty-path") },
    startTimeouts: { initializeMs: ANSWERING_AGENT_START_MS, sessionMs: ANSWERING_AGENT_START_MS },
    // A snapshot waits for the probes it needs as long as they may take to answer.
    snapshotWaitMs: ANSWERING_AGENT_START_MS,
    commandsWaitMs: 1_000,
    ...options,
    configPath,
    probeStore: store,
  });
  services.add(service);
  return Object.assign(service, { configPath, store });
}

/** A config entry for the scripted agent as a custom provider. */
export function scriptedProvider(
  mode: ScriptedAgentMode = "normal",
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    extends: "acp",
    label: `Scripted ${mode}`,
    command: scriptedAcpAgentCommand(mode),
    ...extra,
  };
}

export function writeConfig(path: string, document: unknown): void {
  writeFileSync(path, typeof document === "string" ? document : JSON.stringify(document, null, 2));
}

/** Stops every service's probes and removes every temporary directory. */
export async function cleanUp(): Promise<void> {
  await Promise.all([...services].map((service) => service.close()));
  services.clear();
  for (const directory of directories) rmSync(directory, { recursive: true, force: true });
  directories.clear();
}

/**
 * Pids of scripted agents this process started that still run (Linux: from /proc), so tests
 * can check that every agent a probe started was stopped. Empty where /proc does not exist.
 */
export function runningScriptedAgents(): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (!commandLine.includes(scriptedAcpAgentPath)) continue;
      // Only this test worker's children: other files' tests run in parallel.
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (parent === process.pid) pids.push(Number(entry));
    } catch {
      // Exited while we looked.
    }
  }
  return pids;
}
