import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ServerPath } from "@deckhand/wire";
import { afterEach, describe, expect, it } from "vitest";

// `deckhand batch preview --server` in a process of its own: what is loaded when the run's
// request is written to its socket. A resolve hook records every module resolved and a patch of
// the socket's write records the first write to a TCP peer, both in one log, so their order is
// the order they happened in; the server (in the same process, refusing the token) is reached
// over node:http, taken so that it loads nothing itself.
const script = `
import { registerHooks } from "node:module";
const log = [];
const undiciLoaded = () => process.moduleLoadList.some((name) => name.includes("undici"));
registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    if (/\\/zod\\//.test(result.url) && !log.includes("zod")) log.push("zod");
    return result;
  },
});
const net = process.getBuiltinModule("node:net");
const write = net.Socket.prototype._writeGeneric;
net.Socket.prototype._writeGeneric = function (...args) {
  if (this.remotePort !== undefined && !this.server && !log.some((entry) => entry.startsWith("request"))) {
    log.push(undiciLoaded() ? "request written, undici loaded" : "request written");
  }
  return write.apply(this, args);
};
const requests = [];
const server = process.getBuiltinModule("node:http").createServer((request, response) => {
  requests.push(request.method + " " + request.url);
  request.resume();
  response.writeHead(401, { "content-type": "application/json" });
  response.end(JSON.stringify({ error: { code: "unauthorized", message: "no token" } }));
});
await new Promise((listening) => server.listen(0, "127.0.0.1", listening));
const { runBatchCommand } = await import("./src/batch-command.ts");
let stderr = "";
const code = await runBatchCommand(
  ["preview", process.argv[1], "--server", "http://127.0.0.1:" + server.address().port],
  {
    stdout: { write() {} },
    stderr: { write: (text) => { stderr += text; } },
    cwd: process.cwd(),
    env: {},
  },
);
server.close();
process.stdout.write(JSON.stringify({ log, requests, code, stderr }));
`;

let scratch: string | undefined;
afterEach(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
});

describe("deckhand batch preview --server, loading", () => {
  it("sends the run's request before it loads the API's schemas or undici", () => {
    scratch = mkdtempSync(join(tmpdir(), "deckhand-cli-loading-"));
    const spec = join(scratch, "spec.yaml");
    writeFileSync(spec, "name: one\nsteps:\n  - run: true\n    container: alpine:3\n");
    const output = execFileSync(
      process.execPath,
      ["--conditions=source", "--input-type=module", "--eval", script, spec],
      { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8" },
    );
    const seen = JSON.parse(output);
    // Neither the schemas (zod) nor Node's fetch and WebSocket (undici) are loaded before the
    // request is on its way; the schemas are loaded after, to check the answer.
    expect(seen.log).toEqual(["request written", "zod"]);
    expect(seen.requests).toEqual([`POST ${ServerPath.batchRuns}`]);
    expect(seen.code).toBe(1);
    expect(seen.stderr).toContain("no token");
  });
});
