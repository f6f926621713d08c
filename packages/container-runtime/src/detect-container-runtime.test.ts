import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { ContainerRuntimeError } from "./container-runtime-error.ts";
import { detectContainerRuntime, requireContainerRuntime } from "./detect-container-runtime.ts";
import { containerTestSetup } from "./test-support.ts";

const setup = await containerTestSetup();

/** True on machines like CI's: a docker client binary is installed, but no daemon answers. */
const dockerClientWithoutDaemon =
  spawnSync("docker", ["--version"]).status === 0 &&
  spawnSync("docker", ["info"], { timeout: 5000 }).status !== 0;

describe("detectContainerRuntime", () => {
  it.skipIf(setup.runtime === null)("finds podman by a working `podman info`", async () => {
    const detection = await detectContainerRuntime({ restrictedHost: true });
    expect(detection.runtime?.kind).toBe("podman");
    expect(detection.runtime?.version).toMatch(/^\d+\.\d+/);
    expect(detection.runtime?.globalArgs).toEqual([
      "--runtime",
      "runc",
      "--cgroup-manager",
      "cgroupfs",
    ]);
    expect(detection.probes[0]).toMatchObject({ kind: "podman", unavailableReason: null });
  });

  it.skipIf(!dockerClientWithoutDaemon)(
    "refuses a docker client without a daemon and says why",
    async () => {
      const detection = await detectContainerRuntime({ candidates: ["docker"] });
      expect(detection.runtime).toBeNull();
      expect(detection.probes[0]?.unavailableReason).toMatch(
        /^docker: the client is installed but `docker info` failed: .*Cannot connect to the Docker daemon/,
      );
    },
  );

  it("says a candidate whose binary is missing is not installed", async () => {
    const detection = await detectContainerRuntime({
      candidates: ["podman"],
      binaries: { podman: "deckhand-no-such-podman" },
    });
    expect(detection.runtime).toBeNull();
    expect(detection.probes[0]?.unavailableReason).toBe(
      "podman: not installed (no `deckhand-no-such-podman` on PATH)",
    );
  });

  it("does not take a binary whose `info` fails for a runtime", async () => {
    const detection = await detectContainerRuntime({
      candidates: ["docker"],
      binaries: { docker: "false" },
    });
    expect(detection.runtime).toBeNull();
    expect(detection.probes[0]?.unavailableReason).toBe(
      "docker: the client is installed but `docker info` failed: (no output)",
    );
  });

  it("does not take a client whose `info` does not answer in time", async () => {
    const directory = mkdtempSync(join(tmpdir(), "deckhand-slow-client-"));
    try {
      const slow = join(directory, "podman");
      writeFileSync(slow, "#!/bin/sh\nexec sleep 10\n");
      chmodSync(slow, 0o755);
      const started = Date.now();
      const detection = await detectContainerRuntime({
        candidates: ["podman"],
        binaries: { podman: slow },
        timeoutMs: 300,
      });
      expect(detection.runtime).toBeNull();
      expect(detection.probes[0]?.unavailableReason).toBe(
        "podman: the client is installed but `podman info` did not answer within 300 ms",
      );
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("requireContainerRuntime fails with no_runtime and every candidate's reason", async () => {
    const failure = await requireContainerRuntime({
      binaries: { podman: "deckhand-no-such-podman", docker: "false" },
    }).catch((error: unknown) => error);
    expect(ContainerRuntimeError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ code: "no_runtime" });
    expect((failure as Error).message).toContain("podman: not installed");
    expect((failure as Error).message).toContain("docker: the client is installed but");
    expect((failure as Error).message).toContain("--runtime local");
  });
});

describe("ContainerRuntimeError.isInstance", () => {
  it("recognises an error marked by another realm's copy of the class, and nothing else", () => {
    const foreign = runInNewContext(`
      const error = new Error("from elsewhere");
      for (const key of ["deckhand.error", "deckhand.error.ContainerRuntimeError"]) {
        Object.defineProperty(error, Symbol.for(key), { value: true });
      }
      error`);
    expect(foreign instanceof ContainerRuntimeError).toBe(false);
    expect(ContainerRuntimeError.isInstance(foreign)).toBe(true);
    expect(ContainerRuntimeError.isInstance(new ContainerRuntimeError("no_runtime", "x"))).toBe(
      true,
    );
    expect(ContainerRuntimeError.isInstance(new Error("plain"))).toBe(false);
    expect(ContainerRuntimeError.isInstance(null)).toBe(false);
  });
});

describe("container test setup", () => {
  const missing = { podman: "deckhand-no-such-podman" };

  it("fails loudly in CI when no runtime works", async () => {
    await expect(containerTestSetup({ binaries: missing, ci: "true" })).rejects.toThrow(
      /container tests need Podman \(podman: not installed.*scripts\/container-runtime\.sh.*CI must install it/,
    );
  });

  it("skips outside CI with a message saying how to install Podman", async () => {
    const skipped = await containerTestSetup({ binaries: missing, ci: "" });
    expect(skipped.runtime).toBeNull();
    expect(skipped.skipReason).toContain("sudo bash scripts/container-runtime.sh");
  });
});
