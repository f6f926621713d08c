import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { temporaryDirectory } from "../test/support.ts";
import { localStepShell } from "./local-step-shell.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
afterEach(() => scratch?.remove());

/** A directory holding executables named `names` (scripts that do nothing). */
function binDirectory(name: string, names: string[]): string {
  const directory = join(scratch.path, name);
  mkdirSync(directory);
  for (const executable of names) {
    writeFileSync(join(directory, executable), "#!/bin/sh\n");
    chmodSync(join(directory, executable), 0o755);
  }
  return directory;
}

describe("localStepShell", () => {
  it("gives a run script the first bash on the step's PATH", async () => {
    scratch = temporaryDirectory();
    const first = binDirectory("first", ["sh"]);
    const second = binDirectory("second", ["bash", "sh"]);
    expect(await localStepShell(`${first}:${second}`, "run")).toBe(join(second, "bash"));
  });

  it("falls back to sh when the PATH has no bash", async () => {
    scratch = temporaryDirectory();
    const only = binDirectory("only", ["sh"]);
    expect(await localStepShell(only, "run")).toBe(join(only, "sh"));
  });

  it("gives a codingAgent script, which is POSIX sh, sh even where bash exists", async () => {
    scratch = temporaryDirectory();
    const both = binDirectory("both", ["bash", "sh"]);
    expect(await localStepShell(both, "codingAgent")).toBe(join(both, "sh"));
  });

  it("skips a directory entry named bash that is not an executable file", async () => {
    scratch = temporaryDirectory();
    const broken = join(scratch.path, "broken");
    mkdirSync(join(broken, "bash"), { recursive: true });
    symlinkSync("/nonexistent/bash", join(broken, "sh"));
    const good = binDirectory("good", ["sh"]);
    expect(await localStepShell(`${broken}:${good}`, "run")).toBe(join(good, "sh"));
    expect(await localStepShell("", "run")).toBe("sh");
  });
});
