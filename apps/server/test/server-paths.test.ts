import { realpathSync } from "node:fs";
import { join } from "node:path";
import { type ErrorResponse, ServerPath } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  backends,
  Cleanups,
  databaseUrlFor,
  startTestServer,
  type TestServer,
  tempDir,
} from "./harness.ts";

const spec = `
name: hello
on:
  - repository: acme/missing
steps:
  - run: echo hi > HELLO.md
    container: alpine:3
changesetTemplate:
  title: t
  branch: b
  commit:
    message: m
`;

describe.each(backends)("no server path in an API error ($backend)", ({ backend }) => {
  const cleanups = new Cleanups();
  let server: TestServer;
  let dataDir: string;
  const cwd = process.cwd();

  beforeAll(async () => {
    dataDir = realpathSync(tempDir(cleanups));
    server = await startTestServer(cleanups, {
      dataDir,
      config: {
        databaseUrl: await databaseUrlFor(cleanups, backend),
        workspaceAgent: false,
        batchConcurrency: 0,
        // A git code host that cannot be cloned: resolving any spec clones it first.
        codeHosts: [{ type: "git", url: `file://${join(dataDir, "no-such-repository.git")}` }],
      },
    });
  });
  afterAll(() => cleanups.run());

  /** Sends a request that fails; answers its error, after checking it names no server path. */
  async function failing(method: string, path: string, body: unknown) {
    const response = await server.api<ErrorResponse>(method, path, { body });
    expect(response.status, response.text).toBeGreaterThanOrEqual(400);
    expect(response.status, response.text).toBeLessThan(600);
    for (const serverDirectory of [dataDir, cwd]) {
      expect(response.text, `${method} ${path} answered ${response.text}`).not.toContain(
        serverDirectory,
      );
    }
    return response.body.error;
  }

  it("a repository_url git cannot clone: git's message without the directory it ran in", async () => {
    // It was `could not clone repository_url: git clone failed in <server's cwd>: fatal: …`.
    const error = await failing("POST", ServerPath.projects, {
      repository_url: "file:///nonexistent/deckhand-test-repository.git",
    });
    expect(error.code).toBe("invalid_request");
    expect(error.message).toContain("could not clone repository_url: git clone failed: fatal:");
  });

  it("a repository_path inside the data directory is named relative to it", async () => {
    const error = await failing("POST", ServerPath.projects, {
      repository_path: join(dataDir, "projects"),
    });
    expect(error.message).toContain(
      'repository_path "<data-dir>/projects" is not a git repository',
    );
  });

  it("a code host that cannot be cloned, resolving or creating a run", async () => {
    const resolved = await failing("POST", ServerPath.resolveBatchWorkspaces, {
      source: spec,
      file: "hello.yaml",
    });
    expect(resolved.code).toBe("upstream_unavailable");
    expect(resolved.message).toContain("cloning file://<data-dir>/no-such-repository.git failed");
    const created = await failing("POST", ServerPath.batchRuns, {
      source: spec,
      file: "hello.yaml",
    });
    expect(created.message).toContain("cloning file://<data-dir>/no-such-repository.git failed");
  });
});
