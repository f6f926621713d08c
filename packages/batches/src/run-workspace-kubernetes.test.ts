// `--runtime kubernetes` against the fake API server of @deckhand/testkit (no cluster runs on
// these machines): its pods run in Podman with the offline busybox image, on a directory that is
// both the executor's work volume and the claim's.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { ContainerRuntime } from "@deckhand/container-runtime";
import { containerTestSetup } from "@deckhand/container-runtime/test-support";
import type { KubernetesRuntimeConfig } from "@deckhand/kubernetes-runtime/config";
import { eventually, type FakeKubernetes, startFakeKubernetes } from "@deckhand/testkit";
import type { BatchRunEvent } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces } from "./resolve-workspaces.ts";
import { runWorkspace } from "./run-workspace.ts";
import { MemoryStepCache } from "./step-cache.ts";
import type { StepRuntimeChoice } from "./step-placement.ts";

const setup = await containerTestSetup();
const runtime = setup.runtime as ContainerRuntime;
const CLAIM = "executor-data";

let scratch: ReturnType<typeof temporaryDirectory>;
let cluster: FakeKubernetes;
let config: KubernetesRuntimeConfig;

beforeEach(async () => {
  scratch = temporaryDirectory();
  const volume = join(scratch.path, "volume");
  mkdirSync(volume);
  if (setup.runtime === null) return;
  cluster = await startFakeKubernetes({ cli: runtime, claims: { [CLAIM]: volume } });
  config = {
    kubeconfig: cluster.writeKubeconfig(join(scratch.path, "kubeconfig")),
    workVolume: { claimName: CLAIM, mountPath: volume },
    terminationGracePeriodSeconds: 1,
  };
});

afterEach(async () => {
  await cluster?.close();
  scratch.remove();
});

function spec(image: string, extra = "") {
  return specFrom(`
name: kube
on:
  - repositoriesMatchingQuery: generated
steps:
  - run: |
      echo "step one in \${{ repository.name }}"
      sed 's/old/new/' README.md > README.next && mv README.next README.md
      printf '%s\\n' "$GREETING" > greeting.txt
      cat /tmp/deckhand-note >> greeting.txt
      echo "to stderr" >&2
    container: ${image}
    env:
      GREETING: hello from \${{ repository.name }}
    files:
      /tmp/deckhand-note: note for \${{ batch_change.name }}
  - run: |
      echo "previous said: \${{ previous_step.stdout }}" > summary.txt
      ls >> summary.txt
    container: ${image}
${extra}
changesetTemplate:
  title: Kube
  branch: kube
  commit:
    message: kube
`);
}

/** Runs every workspace of the spec with `choice` and returns their diffs, in order. */
async function runAll(
  yaml: ReturnType<typeof spec>,
  root: string,
  choice: StepRuntimeChoice,
  checkoutRoot: string,
  events: BatchRunEvent[],
) {
  const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
  const { workspaces } = await resolveWorkspaces(yaml, { repositories });
  const results = [];
  // As the service does: one environment for the process, so the shell each image gets is found
  // out once.
  const environment = testEnvironment(scratch.path, {
    ...(choice === "kubernetes" ? { kubernetes: config } : {}),
    outerEnvironment: { PATH: process.env.PATH },
  });
  for (const [index, workspace] of workspaces.entries()) {
    const checkout = await checkoutWorkspace(workspace, join(checkoutRoot, `checkout-${index}`));
    results.push(
      await runWorkspace({
        workspace,
        spec: yaml,
        checkout,
        runtime: choice,
        environment,
        cache: new MemoryStepCache(),
        onEvent: (event) => events.push(event),
      }),
    );
  }
  return results;
}

function generatedRepositories(count: number): string {
  const root = join(scratch.path, "code");
  for (let index = 0; index < count; index += 1) {
    repositoryAt(join(root, `example.com/generated-${index}`), {
      "README.md": `# generated ${index}\nthe old text\n`,
      "src/main.txt": `main of ${index}\n`,
    });
  }
  return root;
}

/** Every Job, pod and step Secret is gone from the cluster. */
function clusterEmpty(): Promise<boolean> {
  return eventually(
    () =>
      cluster.objects("jobs").length === 0 &&
      cluster.objects("pods").length === 0 &&
      cluster.objects("secrets").length === 0,
    30_000,
  );
}

describe.skipIf(setup.runtime === null)("runWorkspace with --runtime kubernetes", () => {
  it("runs each step as a Job and ends with the same diffs as a local run; logs stream, Jobs go", async () => {
    const root = generatedRepositories(3);
    const localEvents: BatchRunEvent[] = [];
    const local = await runAll(
      spec(setup.image),
      root,
      "local",
      join(scratch.path, "local"),
      localEvents,
    );
    const events: BatchRunEvent[] = [];
    const kube = await runAll(
      spec(setup.image),
      root,
      "kubernetes",
      join(scratch.path, "volume", "workspaces"),
      events,
    );
    expect(kube.map((result) => [result.status, result.error])).toEqual(
      local.map(() => ["completed", null]),
    );
    expect(kube.map((result) => result.result?.diff)).toEqual(
      local.map((result) => result.result?.diff),
    );
    expect(kube[0]!.result!.diff).toContain("+the new text");
    expect(kube[0]!.result!.diff).toContain("+hello from example.com/generated-0");
    expect(kube[0]!.result!.diff).toContain("+note for kube");
    expect(kube[0]!.result!.diff).toContain("+previous said: step one in example.com/generated-0");
    expect(kube[0]!.steps.map((step) => [step.runtime, step.shell, step.stderr])).toEqual([
      ["kubernetes", "/bin/sh", "to stderr\n"],
      ["kubernetes", "/bin/sh", ""],
    ]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: "step_started", runtime: "kubernetes", image: setup.image }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "step_output",
        stream: "stdout",
        text: "step one in example.com/generated-0\n",
      }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({ type: "step_output", stream: "stderr", text: "to stderr\n" }),
    );
    expect(await clusterEmpty()).toBe(true);
    // Every step's Job was created and deleted with its pods (and a shell probe for the image).
    const created = cluster.requests.filter(
      (request) => request.method === "POST" && request.path.endsWith("/jobs"),
    );
    const deleted = cluster.requests.filter(
      (request) => request.method === "DELETE" && request.path.includes("/jobs/"),
    );
    expect(created.length).toBe(3 * 2 + 1);
    expect(deleted.length).toBe(created.length);
    expect(deleted.every((request) => request.query.propagationPolicy === "Background")).toBe(true);
  });

  it("deletes the running step's Job when the run is cancelled", async () => {
    const root = generatedRepositories(1);
    const yaml = specFrom(`
name: slow
on:
  - repositoriesMatchingQuery: generated
steps:
  - run: echo started; sleep 300
    container: ${setup.image}
changesetTemplate:
  title: Slow
  branch: slow
  commit:
    message: slow
`);
    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    const [workspace] = (await resolveWorkspaces(yaml, { repositories })).workspaces;
    const checkout = await checkoutWorkspace(workspace!, join(scratch.path, "volume", "one"));
    const controller = new AbortController();
    const events: BatchRunEvent[] = [];
    const running = runWorkspace({
      workspace: workspace!,
      spec: yaml,
      checkout,
      runtime: "kubernetes",
      environment: testEnvironment(scratch.path, { kubernetes: config, outerEnvironment: {} }),
      cache: new MemoryStepCache(),
      signal: controller.signal,
      onEvent: (event) => {
        events.push(event);
        if (event.type === "step_output" && event.text.includes("started")) controller.abort();
      },
    });
    const result = await running;
    expect(result.status).toBe("cancelled");
    expect(cluster.objects("pods")).toEqual([]);
    expect(await clusterEmpty()).toBe(true);
  });

  it("fails the workspace with the reason a pod could not run", async () => {
    const root = generatedRepositories(1);
    const yaml = spec("localhost/deckhand-test/missing:1");
    config = { ...config, imagePullPolicy: "Never" };
    const [result] = await runAll(yaml, root, "kubernetes", join(scratch.path, "volume"), []);
    expect(result!.status).toBe("failed");
    expect(result!.error).toMatch(
      /ErrImageNeverPull: Container image "localhost\/deckhand-test\/missing:1" is not present with pull policy of Never/,
    );
    expect(await clusterEmpty()).toBe(true);
  });

  it("fails a step whose checkout is not on the work volume, saying where it must be", async () => {
    const root = generatedRepositories(1);
    const [result] = await runAll(
      spec(setup.image),
      root,
      "kubernetes",
      join(scratch.path, "elsewhere"),
      [],
    );
    expect(result!.status).toBe("failed");
    expect(result!.error).toMatch(
      /is not on the work volume mounted at .*volume, so a step pod cannot see it/,
    );
  });
});
