import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import type { LoadFnOutput, LoadHookContext } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { deckhandCacheDirectory, strippedTypeScriptLoader } from "./module-caches.ts";

const cliEntry = fileURLToPath(new URL("./bin.ts", import.meta.url));
const scratchDirectories: string[] = [];

function scratch(): string {
  const directory = mkdtempSync(join(tmpdir(), "deckhand-module-caches-"));
  scratchDirectories.push(directory);
  return directory;
}

afterEach(() => {
  for (const directory of scratchDirectories.splice(0)) {
    rmSync(directory, { recursive: true, force: true });
  }
});

describe("deckhandCacheDirectory", () => {
  it("is deckhand under XDG_CACHE_HOME, else under ~/.cache", () => {
    expect(deckhandCacheDirectory({ XDG_CACHE_HOME: "/var/cache/me" }, "/home/me")).toBe(
      "/var/cache/me/deckhand",
    );
    expect(deckhandCacheDirectory({}, "/home/me")).toBe("/home/me/.cache/deckhand");
  });

  it("ignores an empty or relative XDG_CACHE_HOME, as the XDG rules say", () => {
    for (const value of ["", "relative/cache"]) {
      expect(deckhandCacheDirectory({ XDG_CACHE_HOME: value }, "/home/me")).toBe(
        "/home/me/.cache/deckhand",
      );
    }
  });
});

describe("strippedTypeScriptLoader", () => {
  const typescript =
    "const answer: number = 42;\nexport function twice(value: number): number {\n  return value * 2;\n}\n";
  const context = { conditions: [], format: undefined, importAttributes: {} } as LoadHookContext;

  function loaderOver(directory: string, loaded: LoadFnOutput) {
    let calls = 0;
    const load = strippedTypeScriptLoader(directory);
    return {
      load: (url: string) =>
        load(url, context, () => {
          calls += 1;
          return loaded;
        }),
      calls: () => calls,
    };
  }

  it("gives Node the module with its types stripped, at the same lines and columns", () => {
    const directory = scratch();
    const { load } = loaderOver(directory, {
      format: "module-typescript",
      source: Buffer.from(typescript),
    });
    const result = load("file:///repo/answer.ts");
    expect(result.format).toBe("module");
    const stripped = String(result.source);
    expect(stripped).not.toContain(": number");
    expect(stripped.length).toBe(typescript.length);
    expect(stripped.split("\n").map((line) => line.indexOf("return"))).toEqual(
      typescript.split("\n").map((line) => line.indexOf("return")),
    );
    // Kept for the next start, readable by this user only.
    const [kept] = readdirSync(directory);
    expect(readFileSync(join(directory, kept!), "utf8")).toBe(stripped);
    expect(statSync(join(directory, kept!)).mode & 0o077).toBe(0);
  });

  it("reads what it kept for the same source instead of stripping again", () => {
    const directory = scratch();
    const { load } = loaderOver(directory, { format: "module-typescript", source: typescript });
    load("file:///repo/answer.ts");
    const [kept] = readdirSync(directory);
    // Marks the kept file: only a read of it can return the mark.
    writeFileSync(join(directory, kept!), "export const kept = true;\n");
    expect(String(load("file:///repo/answer.ts").source)).toBe("export const kept = true;\n");
  });

  it("strips again when the source changed", () => {
    const directory = scratch();
    loaderOver(directory, { format: "module-typescript", source: typescript }).load("file:///a.ts");
    const changed = typescript.replace("42", "43");
    const result = loaderOver(directory, { format: "module-typescript", source: changed }).load(
      "file:///a.ts",
    );
    expect(String(result.source)).toContain("43");
    expect(readdirSync(directory)).toHaveLength(2);
  });

  it("leaves JavaScript and other formats as Node loaded them", () => {
    const directory = scratch();
    for (const loaded of [
      { format: "module", source: "export const a: number = 1;" },
      { format: "commonjs", source: null },
      { format: "json", source: "{}" },
      { format: "builtin", source: null },
    ] as LoadFnOutput[]) {
      expect(loaderOver(directory, loaded).load("file:///x")).toBe(loaded);
    }
    expect(readdirSync(directory)).toEqual([]);
  });
});

describe("the CLI from its sources", () => {
  it("keeps its stripped modules in Deckhand's cache directory and prints nothing more", () => {
    const cacheHome = scratch();
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: cacheHome };
    // Node's own settings would put (or keep) the code cache elsewhere.
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    const run = () =>
      spawnSync(process.execPath, ["--conditions=source", cliEntry, "help"], {
        env,
        stdio: "pipe",
      });
    const first = run();
    expect(first.status).toBe(0);
    // No experimental-feature warning from the stripping, cold or warm.
    expect(first.stderr.toString("utf8")).toBe("");
    const typescript = join(cacheHome, "deckhand", "typescript", process.version);
    expect(readdirSync(typescript).length).toBeGreaterThan(0);
    expect(readdirSync(join(cacheHome, "deckhand", "compile")).length).toBeGreaterThan(0);
    expect(statSync(join(cacheHome, "deckhand")).mode & 0o077).toBe(0);
    const second = run();
    expect(second.status).toBe(0);
    expect(second.stderr.toString("utf8")).toBe("");
    expect(second.stdout.toString("utf8")).toBe(first.stdout.toString("utf8"));
  });
});
