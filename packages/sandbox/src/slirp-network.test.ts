import type { ChildProcess } from "node:child_process";
import { EventEmitter } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { attachSlirpNetwork } from "./slirp-network.ts";

const directory = mkdtempSync(join(tmpdir(), "deckhand-slirp-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/**
 * A stand-in for slirp4netns with its contract: it says it is ready on --ready-fd (3) and runs
 * until --exit-fd (4) is closed. It records its pid so the test can see whether it still runs.
 */
function fakeSlirp(pidFile: string): string {
  const path = join(directory, "slirp4netns");
  writeFileSync(path, `#!/bin/sh\necho $$ > ${pidFile}\nprintf 1 >&3\ncat <&4 >/dev/null\n`, {
    mode: 0o755,
  });
  return path;
}

/** A sandbox as bubblewrap starts it: it reports its child on the info pipe, then has exited. */
function exitedSandbox(): ChildProcess {
  const info = new PassThrough();
  info.end(`{"child-pid": ${process.pid}}`);
  const child = new EventEmitter() as unknown as ChildProcess & { exitCode: number | null };
  Object.assign(child, {
    pid: 1,
    exitCode: 1,
    signalCode: null,
    stdio: [null, null, null, info, new PassThrough()],
  });
  return child;
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("the condition did not hold in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("attachSlirpNetwork", () => {
  it("stops slirp4netns when the sandbox exited while its network was being set up", async () => {
    const pidFile = join(directory, "slirp.pid");
    const slirp4netns = fakeSlirp(pidFile);
    await attachSlirpNetwork(exitedSandbox(), {
      slirp4netns,
      infoFd: 3,
      blockFd: 4,
      timeoutMs: 30_000,
    });
    const pid = Number(readFileSync(pidFile, "utf8"));
    await waitFor(() => !running(pid));
    expect(running(pid)).toBe(false);
  });
});
