// The sandbox's own cost, per process it starts: start→exit of `sh -c true` through
// @deckhand/sandbox's ProcessLauncher with each profile Deckhand uses, beside a bare spawn and
// the launcher with the sandbox off (`sandbox: "none"`), interleaved in one run:
//   - a local batch `run:` step: bubblewrap, with the internet through slirp4netns (the default
//     `stepNetwork: full`) and without it (`stepNetwork: none`);
//   - an agent's command (native `execute`, ACP terminals): bubblewrap, no network;
//   - an agent process on the model proxy (ACP agents, provider probes): bubblewrap plus the
//     in-sandbox Node forwarder that carries the proxy's port to a socket — and its memory.
//
//   node --conditions=source bench/sandbox.ts [rounds]
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  DEFAULT_SANDBOX_SETTINGS,
  detectSandbox,
  type LaunchProfile,
  ProcessLauncher,
} from "@deckhand/sandbox";
import { WirePath } from "@deckhand/wire";
import { median, reportFigure, reportSkipped, round } from "./support/figures.ts";
import { processTree } from "./support/process-tree.ts";

const ROUNDS = Number(process.argv[2] ?? 30);
const WARMUP = 3;

const scratch = mkdtempSync(join(tmpdir(), "deckhand-bench-sandbox-"));
const worktree = join(scratch, "worktree");
mkdirSync(worktree);

/** Resolves with the milliseconds from spawn to exit, or null when it did not exit 0. */
function timed(start: () => ReturnType<typeof spawn>): Promise<number | null> {
  const started = performance.now();
  const child = start();
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  return new Promise((resolveRun, reject) => {
    child.once("error", reject);
    // `exit`, not `close`: when a sandbox fails before its network is up, the slirp4netns
    // started for it keeps a descriptor of the sandbox's open, and `close` never comes.
    child.once("exit", (code) => {
      const ms = performance.now() - started;
      if (code === 0) {
        resolveRun(ms);
        return;
      }
      // What it printed arrives just after the exit.
      setTimeout(() => {
        failures.set(stderr.trim(), (failures.get(stderr.trim()) ?? 0) + 1);
        resolveRun(null);
      }, 50);
    });
  });
}
/** Failed launches by what they printed: a sandbox that fails now and then is a finding too. */
const failures = new Map<string, number>();

const capability = await detectSandbox("auto");
const make = (stepNetwork: "full" | "none") =>
  new ProcessLauncher({
    capability,
    settings: { ...DEFAULT_SANDBOX_SETTINGS, stepNetwork },
    // What a server hands its launcher: the model proxy on its port, answered in process.
    modelProxy: {
      pathPrefix: WirePath.modelProvider,
      port: () => 7420,
      fetch: () => new Response("{}", { headers: { "content-type": "application/json" } }),
    },
  });
const withInternet = make("full");
const withoutInternet = make("none");
const unconfined = ProcessLauncher.unconfined();
const through = (launcher: ProcessLauncher, profile: LaunchProfile) => () =>
  launcher.spawn({
    executable: "sh",
    args: ["-c", "true"],
    cwd: worktree,
    environment: launcher.inheritedEnvironment(),
    profile,
    stdio: ["ignore", "ignore", "pipe"],
  });
const profile = (network: LaunchProfile["network"]): LaunchProfile => ({
  writable: [worktree],
  network,
});

const variants: { name: string; start: () => ReturnType<typeof spawn>; samples: number[] }[] = [
  {
    name: "bare spawn",
    start: () =>
      spawn("sh", ["-c", "true"], { cwd: worktree, stdio: ["ignore", "ignore", "pipe"] }),
    samples: [],
  },
  {
    name: "launcher, sandbox none",
    start: through(unconfined, profile({ internet: true, modelProxy: false })),
    samples: [],
  },
];
if (capability.kind === "bubblewrap") {
  variants.push(
    {
      name: "batch step: bubblewrap + internet (slirp4netns)",
      start: through(withInternet, profile(withInternet.stepNetwork())),
      samples: [],
    },
    {
      name: "batch step: bubblewrap, stepNetwork none",
      start: through(withoutInternet, profile(withoutInternet.stepNetwork())),
      samples: [],
    },
    {
      name: "agent command: bubblewrap, no network",
      start: through(withInternet, profile({ internet: false, modelProxy: false })),
      samples: [],
    },
    {
      name: "agent process: bubblewrap + model-proxy forwarder",
      start: through(withInternet, profile({ internet: false, modelProxy: true })),
      samples: [],
    },
  );
}

/** Resident memory of a sandboxed agent process's tree while its command sleeps. */
async function forwarderMemoryKib(): Promise<{ sandboxed: number; bare: number }> {
  const measure = async (child: ReturnType<typeof spawn>) => {
    // Long enough for bwrap, the forwarder and the command to have started on a busy machine.
    await new Promise((resolveWait) => setTimeout(resolveWait, 1_500));
    const kib = processTree(child.pid!).reduce((total, entry) => total + entry.rssKib, 0);
    child.kill("SIGKILL");
    return kib;
  };
  const sandboxed = withInternet.spawn({
    executable: "sleep",
    args: ["5"],
    cwd: worktree,
    environment: withInternet.inheritedEnvironment(),
    profile: profile({ internet: false, modelProxy: true }),
    stdio: ["ignore", "ignore", "ignore"],
    detached: true,
  });
  const bare = spawn("sleep", ["5"], { stdio: "ignore" });
  return { sandboxed: await measure(sandboxed), bare: await measure(bare) };
}

try {
  if (capability.kind !== "bubblewrap") {
    reportSkipped({
      id: "sandbox-step",
      label: "sandbox cost per batch step",
      skipped: capability.reason,
    });
  }
  for (let index = 0; index < WARMUP + ROUNDS; index += 1) {
    for (const variant of variants) {
      const ms = await timed(variant.start);
      if (index >= WARMUP && ms !== null) variant.samples.push(ms);
    }
  }
  console.log(`start→exit of sh -c true, median of ${ROUNDS} (interleaved):`);
  const bare = median(variants[0]!.samples);
  for (const variant of variants) {
    const ms = median(variant.samples);
    console.log(
      `  ${variant.name.padEnd(52)} ${round(ms, 2).toFixed(2).padStart(8)} ms  ${round(ms / bare, 2)}× bare`,
    );
  }
  for (const [message, count] of failures) {
    console.log(`  ${count} launch(es) failed: ${message || "(nothing on stderr)"}`);
  }
  if (capability.kind === "bubblewrap") {
    const none = median(variants[1]!.samples);
    const figure = (id: string, label: string, index: number) => {
      const ms = median(variants[index]!.samples);
      reportFigure({
        id,
        label,
        value: ms - none,
        unit: "ms",
        anchor: { label: "launch with sandbox none", value: none, unit: "ms" },
        comparison: { value: ms / none, unit: "×" },
        note: `${round(ms, 1)} ms in all`,
      });
    };
    figure("sandbox-step", "sandbox cost per batch step (bubblewrap + slirp4netns)", 2);
    figure("sandbox-step-offline", "sandbox cost per batch step, stepNetwork none", 3);
    figure("sandbox-command", "sandbox cost per agent command (execute, terminal)", 4);
    figure("sandbox-agent-start", "sandbox cost per agent process start (forwarder)", 5);
    const memory = await forwarderMemoryKib();
    reportFigure({
      id: "sandbox-agent-memory",
      label: "memory of a sandboxed agent process tree around `sleep` (bwrap + forwarder)",
      value: memory.sandboxed / 1024,
      unit: "MiB",
      anchor: { label: "bare sleep", value: memory.bare / 1024, unit: "MiB" },
    });
  }
} finally {
  await withInternet.close();
  await withoutInternet.close();
  // A sandbox that exited before its network was up used to leave its slirp4netns running (it
  // holds the descriptors that keep this process alive): any still left is a finding; count
  // them, then stop them.
  const leftover = processTree(process.pid).filter((entry) => entry.pid !== process.pid);
  if (leftover.length > 0) {
    console.log(`  ${leftover.length} process(es) left behind by failed launches; stopping them`);
    for (const entry of leftover) {
      try {
        process.kill(entry.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  }
  rmSync(scratch, { recursive: true, force: true });
}
