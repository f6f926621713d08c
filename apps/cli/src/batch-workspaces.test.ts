import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createTempRepository, gitIn, startGitHttpServer } from "@deckhand/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runBatchCommand } from "./batch-command.ts";

let scratch: string;
let hostDirectory: string;
let dataDirectory: string;
const heads: Record<string, string> = {};

/** A repository with one commit of `files`, placed under the code host as `name`. */
function repository(name: string, files: Record<string, string>): void {
  const made = createTempRepository(files);
  const path = join(hostDirectory, name);
  mkdirSync(dirname(path), { recursive: true });
  renameSync(made.path, path);
  heads[name] = gitIn(path, "rev-parse", "HEAD");
}

beforeEach(() => {
  scratch = mkdtempSync(join(tmpdir(), "deckhand-cli-workspaces-"));
  hostDirectory = join(scratch, "code");
  // An empty data directory: no config.json, so only --code-host offers repositories.
  dataDirectory = join(scratch, "data");
  mkdirSync(dataDirectory);
  repository("github.com/acme/api", { "main.go": 'fmt.Println("api")\n' });
  repository("github.com/acme/web", { "package.json": "{}\n" });
  repository("github.com/acme/docs", { "README.md": "# docs\n" });
});
afterEach(() => rmSync(scratch, { recursive: true, force: true }));

async function run(argv: string[], spec: string, env?: NodeJS.ProcessEnv) {
  writeFileSync(join(scratch, "spec.yaml"), spec);
  let stdout = "";
  let stderr = "";
  const code = await runBatchCommand(["workspaces", ...argv], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    cwd: scratch,
    ...(env ? { env } : {}),
  });
  return { code, stdout, stderr };
}

const hostOptions = () => ["--code-host", hostDirectory, "--data-dir", dataDirectory];

function lines(stdout: string): unknown[] {
  return stdout
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line));
}

describe("deckhand batch workspaces", () => {
  it("lists exactly the repositories a spec names, at their HEAD commits, as JSON lines", async () => {
    const result = await run(
      ["spec.yaml", ...hostOptions()],
      `name: demo
on:
  - repository: github.com/acme/api
  - repository: github.com/acme/web
steps:
  - run: echo hi
    container: alpine:3
changesetTemplate:
  title: Demo
  branch: demo
  commit:
    message: Demo
`,
    );
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const workspace = (repository: string) => ({
      type: "workspace",
      repository,
      branch: "main",
      revision: heads[repository],
      path: "",
      steps: [0],
      only_fetch_workspace: false,
      search_result_paths: [],
      // No database in the data directory yet: nothing is cached.
      cached_steps: 0,
    });
    expect(lines(result.stdout)).toEqual([
      workspace("github.com/acme/api"),
      workspace("github.com/acme/web"),
      { type: "summary", workspaces: 2 },
    ]);
  });

  it("picks the repository whose files match a repositoriesMatchingQuery file: filter", async () => {
    const result = await run(
      ["spec.yaml", ...hostOptions()],
      "name: demo\non:\n  - repositoriesMatchingQuery: file:package\\.json$\n",
    );
    expect(result.code).toBe(0);
    const parsed = lines(result.stdout) as Record<string, unknown>[];
    expect(parsed.map((line) => [line.type, line.repository, line.revision])).toEqual([
      ["workspace", "github.com/acme/web", heads["github.com/acme/web"]],
      ["summary", undefined, undefined],
    ]);
    expect(parsed[0]?.search_result_paths).toEqual(["package.json"]);
  });

  it("prints a table on a terminal", async () => {
    writeFileSync(
      join(scratch, "spec.yaml"),
      "name: demo\non:\n  - repository: github.com/acme/docs\n",
    );
    let stdout = "";
    const code = await runBatchCommand(["workspaces", "spec.yaml", ...hostOptions()], {
      stdout: { write: (text: string) => (stdout += text), isTTY: true },
      stderr: { write: () => true },
      cwd: scratch,
    });
    expect(code).toBe(0);
    const docs = heads["github.com/acme/docs"]!.slice(0, 12);
    expect(stdout.split("\n")).toEqual([
      "REPOSITORY            BRANCH  REVISION      PATH  STEPS  CACHED",
      `github.com/acme/docs  main    ${docs}  .     -      -`,
      "1 workspace",
      "",
    ]);
  });

  it("reads the codeHosts of <data-dir>/config.json", async () => {
    writeFileSync(
      join(dataDirectory, "config.json"),
      JSON.stringify({ codeHosts: [{ type: "directory", path: hostDirectory }] }),
    );
    const result = await run(
      ["spec.yaml", "--data-dir", dataDirectory],
      "name: demo\non:\n  - repository: github.com/acme/docs\n",
    );
    expect(result.code).toBe(0);
    expect(lines(result.stdout)).toContainEqual(
      expect.objectContaining({ repository: "github.com/acme/docs" }),
    );
  });

  it("clones a git URL host with its code host connection's token, as a run does", async () => {
    // A host that answers only with the connection's token: the workspace a preview would run in
    // is listed only when the listing reaches the host as the run does.
    const token = "workspaces-connection-token-7f3a";
    const hostRoot = join(scratch, "host");
    const made = createTempRepository({ "README.md": "# api\n" });
    gitIn(scratch, "clone", "--quiet", "--bare", made.path, join(hostRoot, "acme", "api.git"));
    const head = gitIn(made.path, "rev-parse", "HEAD");
    const host = await startGitHttpServer({ projectRoot: hostRoot, token });
    try {
      writeFileSync(
        join(dataDirectory, "config.json"),
        JSON.stringify({
          codeHosts: [
            { type: "git", url: `${host.url}/acme/api.git`, name: "git.example/acme/api" },
          ],
          codeHostConnections: [
            { type: "gitea", url: host.url, tokenEnv: "TEST_WORKSPACES_TOKEN" },
          ],
        }),
      );
      const result = await run(
        ["spec.yaml", "--data-dir", dataDirectory],
        "name: demo\non:\n  - repository: git.example/acme/api\n",
        { PATH: process.env.PATH, HOME: process.env.HOME, TEST_WORKSPACES_TOKEN: token },
      );
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(lines(result.stdout)).toEqual([
        expect.objectContaining({ repository: "git.example/acme/api", revision: head }),
        { type: "summary", workspaces: 1 },
      ]);
      expect(host.requests.some((request) => request.status === 200)).toBe(true);
    } finally {
      await host.close();
      rmSync(made.path, { recursive: true, force: true });
    }
  });

  it("exits 1 naming the closest repositories when a spec names an unknown one", async () => {
    const result = await run(
      ["spec.yaml", ...hostOptions()],
      "name: demo\non:\n  - repository: github.com/acme/apu\n",
    );
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(
      /^deckhand batch workspaces: repository github\.com\/acme\/apu not found .*closest are: github\.com\/acme\/api/,
    );
  });

  it("exits 1 with located diagnostics for an invalid spec", async () => {
    const result = await run(["spec.yaml", ...hostOptions()], "name: broken spec\n");
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^spec\.yaml:1:7: name: /);
  });

  it("exits 2 with its usage for a missing spec or an unknown option", async () => {
    for (const argv of [[], ["spec.yaml", "--code-hots", hostDirectory]]) {
      const result = await run(argv, "name: demo\n");
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("Usage: deckhand batch workspaces <spec>");
    }
  });

  it("takes the runtime the run will use, since where a step runs is part of its cache key", async () => {
    const result = await run(["spec.yaml", ...hostOptions(), "--runtime", "nowhere"], "name: x\n");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      '--runtime must be auto, local, container or kubernetes, got "nowhere"',
    );
    const local = await run(
      ["spec.yaml", ...hostOptions(), "--runtime", "local"],
      "name: demo\non:\n  - repository: github.com/acme/docs\n",
    );
    expect(local.code).toBe(0);
  });
});
