import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { containerTestSetup } from "../test/support.ts";
import { ContainerRuntimeError } from "./container-runtime-error.ts";
import { detectContainerRuntime, requireContainerRuntime } from "./detect-container-runtime.ts";
import { runContainer } from "./run-container.ts";

const setup = await containerTestSetup();

/** True on machines like CI's: a docker client binary is installed, but no daemon answers. */
const dockerClientWithoutDaemon =
  spawnSync("docker", ["--version"]).status === 0 &&
  spawnSync("docker", ["info"], { timeout: 5000 }).status !== 0;

/** An executable `name` in `directory` running `body` with /bin/sh; returns its path. */
function fakeClient(directory: string, name: string, body: string): string {
  const path = join(directory, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

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

  it("stops at the first candidate that works: a later one is never started", async () => {
    const directory = mkdtempSync(join(tmpdir(), "deckhand-first-candidate-"));
    try {
      const podman = fakeClient(directory, "podman", "echo '4.9.0|false'");
      // A docker client whose daemon socket hangs would hold detection up to its timeout.
      const started = join(directory, "docker-started");
      const docker = fakeClient(directory, "docker", `touch ${started}; exec sleep 60`);
      const detection = await detectContainerRuntime({
        binaries: { podman, docker },
        restrictedHost: true,
      });
      expect(detection.runtime).toMatchObject({ kind: "podman", version: "4.9.0" });
      expect(detection.probes.map((probe) => probe.kind)).toEqual(["podman"]);
      expect(existsSync(started)).toBe(false);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
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
      writeFileSync(slow, "#!/bin/sh\nexec sleep 60\n");
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
      // Well short of the client's 60 s, however busy the machine.
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("waits for a slow first `podman info` (storage set up after a reboot) instead of giving up at 5 s", async () => {
    const directory = mkdtempSync(join(tmpdir(), "deckhand-slow-info-"));
    try {
      const podman = fakeClient(
        directory,
        "podman",
        `case "$1" in
  info) sleep 6; echo '4.9.0|false' ;;
  run) echo 'Error: runc: exec: "/deckhand-runtime-trial": no such file or directory' >&2; exit 127 ;;
esac`,
      );
      const detection = await detectContainerRuntime({
        candidates: ["podman"],
        binaries: { podman },
      });
      expect(detection.probes[0]?.unavailableReason).toBeNull();
      expect(detection.runtime).toMatchObject({ kind: "podman", version: "4.9.0" });
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("finds a restricted host by trying a container, and then passes the restricted-host flags", async () => {
    const directory = mkdtempSync(join(tmpdir(), "deckhand-restricted-"));
    try {
      const log = join(directory, "calls.log");
      // Podman's defaults fail as on Deckhand's CI machines; with runc, cgroupfs and lower
      // ulimits the container is created and only the trial's command is missing.
      const podman = fakeClient(
        directory,
        "podman",
        `echo "$*" >> ${log}
case "$*" in
  *info*) echo '4.3.1|false' ;;
  *"--runtime runc"*"--ulimit nofile=1024:1024"*) echo 'Error: runc: exec: no such file' >&2; exit 127 ;;
  *) echo 'Error: crun: setrlimit RLIMIT_NOFILE: Operation not permitted: OCI permission denied' >&2; exit 126 ;;
esac`,
      );
      const detection = await detectContainerRuntime({
        candidates: ["podman"],
        binaries: { podman },
      });
      expect(detection.runtime).toMatchObject({
        globalArgs: ["--runtime", "runc", "--cgroup-manager", "cgroupfs"],
        runArgs: ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"],
        restrictedHost: true,
      });
      expect(detection.probes[0]?.note).toBe(
        "podman: its defaults cannot start a container here (Error: crun: setrlimit RLIMIT_NOFILE: Operation not permitted: OCI permission denied), so it runs with --runtime runc --cgroup-manager cgroupfs --ulimit nofile=1024:1024 --ulimit nproc=1024:1024; set containerRuntime.restrictedHost to true to skip this trial",
      );
      // The trial ran on an empty root file system, and nothing of it is left.
      const trials = readFileSync(log, "utf8")
        .split("\n")
        .filter((line) => line.includes("run "));
      expect(trials).toHaveLength(2);
      const root = /--rootfs (\S+)/.exec(trials[0]!)![1]!;
      expect(existsSync(root)).toBe(false);

      // restrictedHost: false refuses the flags, so this host has no runtime, and says why.
      const refused = await detectContainerRuntime({
        candidates: ["podman"],
        binaries: { podman },
        restrictedHost: false,
      });
      expect(refused.runtime).toBeNull();
      expect(refused.probes[0]?.unavailableReason).toMatch(
        /^podman: `podman run` cannot start a container here \(Error: crun: setrlimit .*\); containerRuntime.restrictedHost is false/,
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("does not take a podman that cannot start a container either way, and says why", async () => {
    const directory = mkdtempSync(join(tmpdir(), "deckhand-no-containers-"));
    try {
      const podman = fakeClient(
        directory,
        "podman",
        `case "$1" in
  info) echo '4.3.1|false' ;;
  *) echo 'Error: OCI runtime "runc" not found' >&2; exit 125 ;;
esac`,
      );
      const detection = await detectContainerRuntime({
        candidates: ["podman"],
        binaries: { podman },
      });
      expect(detection.runtime).toBeNull();
      expect(detection.probes[0]?.unavailableReason).toBe(
        'podman: `podman run` cannot start a container here (Error: OCI runtime "runc" not found), nor with the restricted-host flags (Error: OCI runtime "runc" not found); see docs/operations/container-runtimes.md',
      );
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it.skipIf(setup.runtime === null)(
    "on this machine, runs a container with what it detected without being told the host is restricted",
    async () => {
      const detection = await detectContainerRuntime({ candidates: ["podman"] });
      expect(detection.runtime).not.toBeNull();
      const result = await runContainer(detection.runtime!, {
        image: setup.image,
        script: "echo ok",
        timeoutMs: 120_000,
      });
      // Plain `podman run` fails on hosts like CI's (refused rlimits): the trial found that out.
      expect({ exitCode: result.exitCode, output: result.output.text }).toEqual({
        exitCode: 0,
        output: "ok\n",
      });
    },
    180_000,
  );

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
