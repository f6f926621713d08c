import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ensureImage } from "./container-image.ts";
import type { ContainerRuntime } from "./detect-container-runtime.ts";
import { runContainer } from "./run-container.ts";

const directory = mkdtempSync(join(tmpdir(), "deckhand-container-image-"));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/**
 * A CLI that records its arguments one per line (a blank line after each call) and reads every
 * argument after `--` as positional, as Docker's and Podman's do: it answers `image inspect` as
 * if the image existed, and fails anything that reached it as an unknown option.
 */
function recordingRuntime(name: string): { runtime: ContainerRuntime; calls: () => string[][] } {
  const log = join(directory, `${name}.log`);
  const binary = join(directory, `${name}.sh`);
  writeFileSync(
    binary,
    `#!/bin/sh
for argument in "$@"; do printf '%s\\n' "$argument" >> '${log}'; done
printf '\\n' >> '${log}'
for argument in "$@"; do
  case "$argument" in
    --) break ;;
    --privileged) echo "unknown flag: --privileged" >&2; exit 125 ;;
  esac
done
if [ "$1" = image ]; then echo '[{"Id":"sha256:fake"}]'; fi
exit 0
`,
  );
  chmodSync(binary, 0o755);
  const runtime: ContainerRuntime = {
    kind: "podman",
    binary,
    globalArgs: [],
    runArgs: [],
    version: "0",
    rootless: false,
    restrictedHost: false,
  };
  const calls = () =>
    readFileSync(log, "utf8")
      .split("\n\n")
      .filter((call) => call !== "")
      .map((call) => call.split("\n"));
  return { runtime, calls };
}

describe("image references that look like options", () => {
  it("reach `image inspect` and `pull` after `--`, as an image and never a flag", async () => {
    const { runtime, calls } = recordingRuntime("inspect");
    const image = await ensureImage(runtime, "--privileged");
    expect(image.id).toBe("sha256:fake");
    expect(calls()).toEqual([["image", "inspect", "--", "--privileged"]]);
  });

  it("reach `run` after `--`, with a script and with a command", async () => {
    const { runtime, calls } = recordingRuntime("run");
    await runContainer(runtime, { image: "--privileged", script: "true", name: "step" });
    await runContainer(runtime, { image: "--privileged", command: ["true"], name: "step" });
    const runs = calls().filter((call) => call[0] === "run");
    expect(runs).toHaveLength(2);
    expect(runs[0]!.slice(-5)).toEqual(["/bin/sh", "--", "--privileged", "-c", "true"]);
    expect(runs[1]!.slice(-3)).toEqual(["--", "--privileged", "true"]);
  });
});
