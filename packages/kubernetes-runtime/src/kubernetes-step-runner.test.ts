import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContainerRuntime } from "@deckhand/container-runtime";
import { containerTestSetup } from "@deckhand/container-runtime/test-support";
import { eventually, type FakeKubernetes, startFakeKubernetes } from "@deckhand/testkit";
import { KubeConfig } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type KubernetesRuntimeConfig,
  type KubernetesRuntimeSettings,
  kubernetesRuntimeSettings,
} from "./kubernetes-config.ts";
import { KubernetesRuntimeError } from "./kubernetes-runtime-error.ts";
import { type KubernetesStep, KubernetesStepRunner } from "./kubernetes-step-runner.ts";

const setup = await containerTestSetup();
const runtime = setup.runtime as ContainerRuntime;
const CLAIM = "deckhand-data";

let volume: string;
let checkout: string;
let cluster: FakeKubernetes;

beforeEach(async () => {
  volume = mkdtempSync(join(tmpdir(), "deckhand-kubernetes-volume-"));
  checkout = join(volume, "workspaces", "one");
  mkdirSync(join(checkout, "sub"), { recursive: true });
  writeFileSync(join(checkout, "sub", "input.txt"), "from the checkout\n");
  if (setup.runtime !== null) {
    cluster = await startFakeKubernetes({
      cli: runtime,
      claims: { [CLAIM]: volume },
      namespaces: ["steps"],
      bookmarkIntervalMs: 200,
    });
  }
});

afterEach(async () => {
  await cluster?.close();
  rmSync(volume, { recursive: true, force: true });
});

function runner(config: Partial<KubernetesRuntimeConfig> = {}): KubernetesStepRunner {
  const settings: KubernetesRuntimeSettings = kubernetesRuntimeSettings({
    namespace: "steps",
    workVolume: { claimName: CLAIM, mountPath: volume },
    terminationGracePeriodSeconds: 1,
    ...config,
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(cluster.kubeconfig("steps"));
  return new KubernetesStepRunner(settings, kubeConfig);
}

function step(script: string, extra: Partial<KubernetesStep> = {}) {
  const output = { stdout: "", stderr: "" };
  const prepared: KubernetesStep = {
    image: setup.image,
    script,
    checkout: { source: checkout, target: "/work" },
    workdir: "/work/sub",
    onOutput: (stream, data) => {
      output[stream] += data.toString("utf8");
    },
    ...extra,
  };
  return { prepared, output };
}

/** Every Job and pod, and the step Secrets, are gone from the cluster. */
async function clusterEmpty(): Promise<boolean> {
  return eventually(
    () =>
      cluster.objects("jobs").length === 0 &&
      cluster.objects("pods").length === 0 &&
      cluster.objects("secrets").length === 0,
    30_000,
  );
}

describe.skipIf(setup.runtime === null)("KubernetesStepRunner against the fake API server", () => {
  it("runs a step in the checkout on the volume, streams stdout and stderr apart, and deletes its Job", async () => {
    const { prepared, output } = step(
      'echo "in $(pwd) as $(id -u)"; cat input.txt; echo "$GREETING" > made.txt; cat /etc/deckhand-input; echo warning >&2',
      {
        env: { GREETING: "hello from the pod" },
        mounts: [
          { source: writeInput("mounted file\n"), target: "/etc/deckhand-input", readOnly: true },
        ],
        labels: { "deckhand.dev/step-index": "0" },
        annotations: { "deckhand.dev/job-id": "batch-workspace:1" },
      },
    );
    const result = await runner({
      resources: { limits: { memory: "256Mi" }, requests: { cpu: "100m" } },
    }).run(prepared);
    expect(result).toMatchObject({ ending: "exited", exitCode: 0 });
    expect(output.stdout).toBe(
      `in /work/sub as ${process.getuid?.() ?? 0}\nfrom the checkout\nmounted file\n`,
    );
    expect(output.stderr).toBe("warning\n");
    expect(readFileSync(join(checkout, "sub", "made.txt"), "utf8")).toBe("hello from the pod\n");
    expect(await clusterEmpty()).toBe(true);

    const created = cluster.requests.find(
      (request) => request.method === "POST" && request.path.endsWith("/jobs"),
    )!.body as {
      spec: {
        template: { spec: Record<string, unknown> & { containers: Record<string, unknown>[] } };
      };
    };
    const pod = created.spec.template.spec;
    expect(pod).toMatchObject({
      restartPolicy: "Never",
      serviceAccountName: "deckhand-step",
      automountServiceAccountToken: false,
      enableServiceLinks: false,
    });
    expect(pod.containers[0]).toMatchObject({
      resources: { limits: { memory: "256Mi" }, requests: { cpu: "100m" } },
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
      envFrom: [{ secretRef: { name: result.jobName } }],
    });
    // The environment's values are in the Secret, never in the Job everyone can read.
    expect(JSON.stringify(created)).not.toContain("hello from the pod");
    const deletion = cluster.requests.find(
      (request) => request.method === "DELETE" && request.path.endsWith(`/jobs/${result.jobName}`),
    );
    expect(deletion?.query.propagationPolicy).toBe("Background");
    // The control directory on the volume is removed with the step.
    expect(cluster.objects("jobs")).toEqual([]);
  });

  it("returns a failing script's exit code, with its stderr", async () => {
    const { prepared, output } = step("echo partial; echo broken >&2; exit 3");
    const result = await runner().run(prepared);
    expect(result).toMatchObject({ ending: "exited", exitCode: 3 });
    expect(output).toEqual({ stdout: "partial\n", stderr: "broken\n" });
    expect(await clusterEmpty()).toBe(true);
  });

  it("deletes the Job and its pod when cancelled, and waits for the pod to be gone", async () => {
    const controller = new AbortController();
    const { prepared, output } = step("echo started; sleep 300", { signal: controller.signal });
    const running = runner({ propagationPolicy: "Foreground" }).run(prepared);
    expect(await eventually(() => output.stdout.includes("started"), 60_000)).toBe(true);
    controller.abort();
    const result = await running;
    expect(result).toMatchObject({ ending: "aborted", exitCode: null });
    // Gone when run returns, not only later.
    expect(cluster.objects("pods")).toEqual([]);
    expect(await clusterEmpty()).toBe(true);
    const deletion = cluster.requests.find(
      (request) => request.method === "DELETE" && request.path.includes("/jobs/"),
    );
    expect(deletion?.query.propagationPolicy).toBe("Foreground");
  });

  it("reports a pod that cannot start with the reason Kubernetes gives", async () => {
    const { prepared } = step("true", { image: "localhost/deckhand-test/absent:1" });
    const error = await runner({ imagePullPolicy: "Never" })
      .run(prepared)
      .catch((caught: unknown) => caught);
    expect(KubernetesRuntimeError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(
      /cannot start the step: ErrImageNeverPull: Container image "localhost\/deckhand-test\/absent:1" is not present/,
    );
    expect(await clusterEmpty()).toBe(true);
  });

  it("gives up on a pod that is never scheduled, saying why", async () => {
    const { prepared } = step("true");
    const error = await runner({
      nodeSelector: { "deckhand.dev/pool": "steps" },
      pendingTimeoutSeconds: 5,
    })
      .run(prepared)
      .catch((caught: unknown) => caught);
    expect((error as Error).message).toMatch(
      /still pending after 5 s: Unschedulable: 0\/1 nodes are available: 1 node\(s\) didn't match Pod's node affinity\/selector/,
    );
    expect(await clusterEmpty()).toBe(true);
  });

  it("pins step pods to the executor's node when asked", async () => {
    const { prepared } = step("echo pinned");
    const settings = kubernetesRuntimeSettings(
      {
        namespace: "steps",
        workVolume: { claimName: CLAIM, mountPath: volume },
        sameNodeAsExecutor: true,
      },
      { DECKHAND_NODE_NAME: cluster.nodeName },
    );
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(cluster.kubeconfig("steps"));
    const result = await new KubernetesStepRunner(settings, kubeConfig).run(prepared);
    expect(result.exitCode).toBe(0);
  });

  it("keeps the whole output when watches drop, history is compacted and the log stream breaks", async () => {
    cluster.cutLogFollowsAfterBytes = 10;
    const { prepared, output } = step('for i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.3; done');
    const running = runner().run(prepared);
    const dropping = setInterval(() => {
      cluster.compact();
      cluster.dropWatches();
    }, 250);
    try {
      const result = await running;
      expect(result.exitCode).toBe(0);
    } finally {
      clearInterval(dropping);
    }
    expect(output.stdout).toBe("line 1\nline 2\nline 3\nline 4\nline 5\nline 6\n");
    // The runner watched again after each drop, from the newest version or after a new list.
    const watches = cluster.requests.filter((request) => request.query.watch === "true");
    expect(watches.length).toBeGreaterThan(1);
    expect(watches.every((request) => request.query.allowWatchBookmarks === "true")).toBe(true);
    expect(await clusterEmpty()).toBe(true);
  });
});

function writeInput(content: string): string {
  const directory = mkdtempSync(join(tmpdir(), "deckhand-kubernetes-input-"));
  const path = join(directory, "input");
  writeFileSync(path, content);
  return path;
}
