// biome-ignore-all lint/suspicious/noTemplateCurlyInString: batch spec templates use ${{ }}
import { join } from "node:path";
import { type ResolvedBatchWorkspaces, ServerPath } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  Cleanups,
  gitIn,
  makeRepository,
  startTestServer,
  type TestServer,
  tempDir,
} from "./harness.ts";

/**
 * 4,000,000 template steps that render "false": seconds of work each. Before conditions were
 * bounded, the server evaluated every one of them, one per step and repository, on its event
 * loop while resolving the spec (20 steps × 3 repositories: minutes without an answer to anyone).
 */
const heavyCondition = "${{ range $i := 2000 }}${{ range $j := 2000 }}${{ end }}${{ end }}false";
const stepCount = 20;

const spec = `
name: heavy-conditions
on:
  - repository: acme/api
  - repository: acme/web
  - repository: acme/cli
steps:
${Array.from(
  { length: stepCount },
  (_, index) => `  - run: echo ${index}\n    container: alpine:3\n    if: "${heavyCondition}"`,
).join("\n")}
changesetTemplate:
  title: t
  branch: b
  commit:
    message: m
`;

describe("resolving a spec with heavy conditions", () => {
  const cleanups = new Cleanups();
  let server: TestServer;

  beforeAll(async () => {
    const root = tempDir(cleanups, "deckhand-stall-hosts-");
    for (const name of ["api", "web", "cli"]) {
      const repository = makeRepository(cleanups, { "README.md": `# ${name}\n` });
      gitIn(repository, "clone", "--quiet", repository, join(root, "acme", name));
    }
    server = await startTestServer(cleanups, {
      dataDir: tempDir(cleanups),
      config: {
        workspaceAgent: false,
        batchConcurrency: 0,
        codeHosts: [{ type: "directory", path: root }],
      },
    });
    // Three repositories and a server: generous, for a loaded machine.
  }, 120_000);
  afterAll(() => cleanups.run());

  it("keeps answering health while the spec resolves, and leaves the conditions to run time", async () => {
    let settled = false;
    const resolving = server
      .api<ResolvedBatchWorkspaces>("POST", ServerPath.resolveBatchWorkspaces, {
        body: { source: spec, file: "heavy.yaml" },
      })
      .finally(() => {
        settled = true;
      });
    // Health is asked again and again until the resolution is answered; every answer that
    // arrives while it is still pending shows the event loop was free meanwhile.
    const latencies: number[] = [];
    while (!settled) {
      const started = performance.now();
      const health = await fetch(`${server.server.url}${ServerPath.health}`);
      expect(health.status).toBe(200);
      await health.text();
      if (!settled) latencies.push(performance.now() - started);
    }
    const resolved = await resolving;
    expect(resolved.status, resolved.text).toBe(200);
    // Too heavy to decide ahead of time: every step stays, to be decided when it runs.
    expect(resolved.body.workspaces).toHaveLength(3);
    for (const workspace of resolved.body.workspaces) {
      expect(workspace.step_indexes).toHaveLength(stepCount);
    }
    expect(latencies.length).toBeGreaterThanOrEqual(1);
    console.info(
      `health answered ${latencies.length} times during the resolution; slowest ${Math.round(Math.max(...latencies))} ms`,
    );
  });
});
