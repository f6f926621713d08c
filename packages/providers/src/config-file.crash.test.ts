import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cleanUp, temporaryDirectory } from "../test/support.ts";

const configModule = new URL("./config-file.ts", import.meta.url).href;

/** Two versions large enough that a write takes many syscalls, so a kill can land mid-way. */
function version(letter: string): string {
  const providers: Record<string, unknown> = {};
  for (let index = 0; index < 2_000; index += 1) {
    providers[`agent-${index}`] = {
      extends: "acp",
      command: [`${letter}-${index}`],
      env: { V: letter.repeat(40) },
    };
  }
  return `${JSON.stringify({ providers }, null, 2)}\n`;
}

/** A child process that rewrites the file with alternating versions until it is killed. */
function writeLoop(path: string) {
  const script = `
    import { writeFileAtomically } from ${JSON.stringify(configModule)};
    const [path, a, b] = process.argv.slice(1);
    const { readFileSync } = await import("node:fs");
    const versions = [readFileSync(a, "utf8"), readFileSync(b, "utf8")];
    process.stdout.write("ready\\n");
    for (let i = 0; ; i++) await writeFileAtomically(path, versions[i % 2]);
  `;
  return spawn(
    process.execPath,
    ["--conditions=source", "--input-type=module", "-e", script, path, `${path}.a`, `${path}.b`],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
}

afterEach(cleanUp);

describe("writeFileAtomically killed mid-write", () => {
  it("leaves the old or the new file, never a torn one", async () => {
    const directory = temporaryDirectory();
    const path = join(directory, "providers.json");
    const a = version("a");
    const b = version("b");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(`${path}.a`, a);
    writeFileSync(`${path}.b`, b);
    writeFileSync(path, a);

    for (let round = 0; round < 5; round += 1) {
      const child = writeLoop(path);
      const exited = new Promise((resolve) => child.once("exit", resolve));
      await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()));
      // Let it write for a while, a different time each round, then kill it without warning.
      await new Promise((resolve) => setTimeout(resolve, 40 + round * 37));
      child.kill("SIGKILL");
      await exited;
      const text = readFileSync(path, "utf8");
      expect(text === a || text === b).toBe(true);
    }
    // Temporary files a kill left behind are hidden and never the config itself.
    for (const name of readdirSync(directory)) {
      expect(
        ["providers.json", "providers.json.a", "providers.json.b"].includes(name) ||
          /^\.providers\.json\.deckhand-[0-9a-f]+\.tmp$/.test(name),
      ).toBe(true);
    }
  });
});
