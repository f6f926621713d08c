// Publishing end to end: `deckhand up` as its own process, with config.json naming ten git URL
// repositories on two loopback fake code hosts (GitHub and GitLab: their APIs and git remotes,
// both checking the token) and a code host connection for each, whose tokens are only in the
// server's environment. Driven through the HTTP API only: apply a spec, see ten pull requests
// with the rendered titles and bodies, apply a changed template and see all ten updated and none
// created, fail one's checks and see its onCIFailure hook push a commit, and read the stats
// before and after the host merges one.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeCodeHost, type SpawnedService, startFakeCodeHost } from "@deckhand/testkit";
import {
  type BatchChange,
  type BatchRun,
  ServerPath,
  type StoredBatchChangeset,
  serverPath,
} from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnDeckhandUp } from "./deckhand-up.ts";

const GH_TOKEN_ENV = "E2E_PUBLISH_GITHUB_TOKEN";
const GL_TOKEN_ENV = "E2E_PUBLISH_GITLAB_TOKEN";
const GITHUB_REPOSITORIES = ["acme/svc-0", "acme/svc-1", "acme/svc-2", "acme/svc-3", "acme/svc-4"];
const GITLAB_REPOSITORIES = [
  "platform/svc-5",
  "platform/svc-6",
  "platform/svc-7",
  "platform/svc-8",
  "platform/svc-9",
];

let github: FakeCodeHost;
let gitlab: FakeCodeHost;
let server: SpawnedService;
let dataDir: string;

async function api<Body>(method: string, path: string, body?: unknown): Promise<Body> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as Body;
}

const spec = (title: string) => `
version: 3
name: e2e-publish
description: Publishing end to end
on:
  - repositoriesMatchingQuery: repo:svc-
steps:
  - run: echo "hello from \${{ repository.name }}" > HELLO.md && env | cut -d= -f1 | sort > ENV.txt
    container: alpine:3
changesetTemplate:
  title: ${title} (\${{ repository.name }})
  body: |
    Adds HELLO.md to \${{ repository.name }}.
  branch: e2e/hello
  commit:
    message: Add HELLO.md
  published: true
changesetHooks:
  onCIFailure:
    steps:
      - run: echo fixed > CI-FIX.md
        container: alpine:3
        maxAttempts: 2
`;

async function applySpec(source: string): Promise<BatchRun> {
  const created = await api<BatchRun>("POST", ServerPath.batchRuns, {
    source,
    action: "apply",
    options: { runtime: "local", publish_rate: 6_000 },
  });
  const deadline = Date.now() + 150_000;
  for (;;) {
    const run = await api<BatchRun>(
      "GET",
      serverPath(ServerPath.batchRun, { batch_run_id: created.id }),
    );
    if (run.status !== "queued" && run.status !== "running") return run;
    if (Date.now() > deadline) throw new Error(`run ${run.id} is still ${run.status}`);
    await new Promise((resolveWait) => setTimeout(resolveWait, 200));
  }
}

function pullRequests() {
  return [...github.pullRequests(), ...gitlab.pullRequests()];
}

const batchChangePath = serverPath(ServerPath.batchChange, { name: "e2e-publish" });
const refreshPath = serverPath(ServerPath.batchChangeRefresh, { name: "e2e-publish" });

beforeAll(async () => {
  github = await startFakeCodeHost({ type: "github" });
  gitlab = await startFakeCodeHost({ type: "gitlab" });
  for (const path of GITHUB_REPOSITORIES) {
    github.createRepository(path, { files: { "README.md": `# ${path}\n` } });
  }
  for (const path of GITLAB_REPOSITORIES) {
    gitlab.createRepository(path, { files: { "README.md": `# ${path}\n` } });
  }
  dataDir = mkdtempSync(join(tmpdir(), "deckhand-e2e-publish-"));
  writeFileSync(
    join(dataDir, "config.json"),
    JSON.stringify({
      codeHosts: [
        ...GITHUB_REPOSITORIES.map((path) => ({ type: "git", url: github.cloneUrl(path) })),
        ...GITLAB_REPOSITORIES.map((path) => ({ type: "git", url: gitlab.cloneUrl(path) })),
      ],
      codeHostConnections: [
        { type: "github", url: github.url, apiUrl: github.apiUrl, tokenEnv: GH_TOKEN_ENV },
        { type: "gitlab", url: gitlab.url, apiUrl: gitlab.apiUrl, tokenEnv: GL_TOKEN_ENV },
      ],
    }),
  );
  const environment: NodeJS.ProcessEnv = { ...process.env };
  delete environment.DATABASE_URL;
  server = await spawnDeckhandUp(dataDir, {
    ...environment,
    [GH_TOKEN_ENV]: github.token,
    [GL_TOKEN_ENV]: gitlab.token,
  });
}, 120_000);

afterAll(async () => {
  if (server !== undefined && server.child.exitCode === null) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  await github?.close();
  await gitlab?.close();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

describe("publishing a batch change over two code hosts", () => {
  it("opens, updates in place, runs onCIFailure on a failing check and counts merges", async () => {
    const first = await applySpec(spec("Say hello"));
    expect(first.error).toBeNull();
    expect(first.status).toBe("completed");
    const { changesets } = await api<{ changesets: StoredBatchChangeset[] }>(
      "GET",
      serverPath(ServerPath.batchRunChangesets, { batch_run_id: first.id }),
    );
    expect(changesets).toHaveLength(10);
    // Steps never see a code host token: neither its variable nor its value is in any change.
    for (const changeset of changesets) {
      expect(changeset.diff).toContain("ENV.txt");
      for (const secret of [GH_TOKEN_ENV, GL_TOKEN_ENV, github.token, gitlab.token]) {
        expect(changeset.diff).not.toContain(secret);
      }
    }
    // Ten pull requests, five on each host, with the rendered titles and bodies.
    expect(github.pullRequests()).toHaveLength(5);
    expect(gitlab.pullRequests()).toHaveLength(5);
    for (const changeset of changesets) {
      const path = changeset.repository.split("/").slice(-2).join("/");
      const host = GITHUB_REPOSITORIES.includes(path) ? github : gitlab;
      const [pullRequest] = host.pullRequests(path);
      expect(pullRequest).toMatchObject({
        title: `Say hello (${changeset.repository})`,
        // Trimmed as src-cli trims the rendered body.
        body: `Adds HELLO.md to ${changeset.repository}.`,
        head: "e2e/hello",
        base: "main",
        state: "open",
      });
      expect(changeset).toMatchObject({ state: "open", tracked: true, external_state: "open" });
      expect(changeset.external_url).toContain(String(pullRequest!.number));
    }
    const opened = await api<BatchChange>("GET", batchChangePath);
    expect(opened.stats).toMatchObject({ total: 10, open: 10, merged: 0, unpublished: 0 });

    // A template change: all ten are updated in place, none is created.
    const creates = () =>
      github.requestsTo("POST", /\/pulls$/).length +
      gitlab.requestsTo("POST", /\/merge_requests$/).length;
    expect(creates()).toBe(10);
    const second = await applySpec(spec("Greet"));
    expect(second.error).toBeNull();
    expect(second.status).toBe("completed");
    expect(creates()).toBe(10);
    expect(pullRequests()).toHaveLength(10);
    expect(pullRequests().every((pullRequest) => pullRequest.title.startsWith("Greet ("))).toBe(
      true,
    );

    // A failing check on one: its onCIFailure hook runs on the branch and pushes a commit.
    const failing = github.pullRequests("acme/svc-2")[0]!;
    const headBefore = github.branchSha("acme/svc-2", "e2e/hello");
    github.setChecks("acme/svc-2", failing.number, "failing");
    const refreshed = await api<BatchChange>("POST", refreshPath);
    const svc2 = refreshed.changesets.find((changeset) =>
      changeset.repository.endsWith("acme/svc-2"),
    )!;
    expect(svc2.checks_state).toBe("failing");
    expect(refreshed.stats.checks_failing).toBe(1);
    const headAfter = github.branchSha("acme/svc-2", "e2e/hello");
    expect(headAfter).not.toBe(headBefore);
    expect(svc2.applied_commit).toBe(headAfter);
    expect(svc2.publish_error).toBeNull();
    const { events } = await api<{ events: { type: string }[] }>(
      "GET",
      serverPath(ServerPath.changesetEvents, { changeset_id: svc2.id }),
    );
    expect(events.map((event) => event.type)).toContain("hook_pushed");

    // The host merges one: the stats say 9 open and 1 merged, and the burndown ends there.
    github.merge("acme/svc-0", github.pullRequests("acme/svc-0")[0]!.number);
    const merged = await api<BatchChange>("POST", refreshPath);
    expect(merged.stats).toMatchObject({ total: 10, open: 9, merged: 1 });
    expect(merged.burndown.at(-1)).toMatchObject({ open: 9, merged: 1 });
    // The tokens were only ever in the server's environment: not in its output.
    for (const secret of [github.token, gitlab.token]) {
      expect(server.output.join("\n")).not.toContain(secret);
    }
  }, 400_000);
});
