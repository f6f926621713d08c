import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ServerPath } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";

// `deckhand batch preview --server` in a process of its own: whether zod (every schema of the
// API) is loaded when the run's request goes out. A resolve hook records every module resolved;
// the server is a fetch that refuses the token.
const script = `
import { registerHooks } from "node:module";
const resolved = [];
registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    resolved.push(result.url);
    return result;
  },
});
const zodLoaded = () => resolved.some((url) => /\\/zod\\//.test(url));
const seen = { requests: [] };
globalThis.fetch = async (url, init) => {
  seen.requests.push({ method: init.method, path: new URL(url).pathname, zodLoaded: zodLoaded() });
  return new Response(JSON.stringify({ error: { code: "unauthorized", message: "no token" } }), {
    status: 401,
    headers: { "content-type": "application/json" },
  });
};
const { runBatchCommand } = await import("./src/batch-command.ts");
let stderr = "";
seen.code = await runBatchCommand(["preview", process.argv[1], "--server", "http://127.0.0.1:9"], {
  stdout: { write() {} },
  stderr: { write: (text) => { stderr += text; } },
  cwd: process.cwd(),
  env: {},
});
seen.stderr = stderr;
process.stdout.write(JSON.stringify(seen));
`;

let scratch: string | undefined;
afterEach(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
});

describe("deckhand batch preview --server, loading", () => {
  it("sends the run's request before it loads the API's schemas", () => {
    scratch = mkdtempSync(join(tmpdir(), "deckhand-cli-loading-"));
    const spec = join(scratch, "spec.yaml");
    writeFileSync(spec, "name: one\nsteps:\n  - run: true\n    container: alpine:3\n");
    const output = execFileSync(
      process.execPath,
      ["--conditions=source", "--input-type=module", "--eval", script, spec],
      { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8" },
    );
    const seen = JSON.parse(output);
    expect(seen.requests).toEqual([
      { method: "POST", path: ServerPath.batchRuns, zodLoaded: false },
    ]);
    expect(seen.code).toBe(1);
    expect(seen.stderr).toContain("no token");
  });
});
