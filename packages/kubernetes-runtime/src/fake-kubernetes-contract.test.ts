// The fake API server of @deckhand/testkit as @kubernetes/client-node sees it: the answers the
// runtime depends on, in the shapes a real API server gives (Status bodies with their reasons,
// the Orphan default of batch/v1 Jobs, Foreground deletion, watches from a version).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContainerRuntime } from "@deckhand/container-runtime";
import { containerTestSetup } from "@deckhand/container-runtime/test-support";
import { eventually, type FakeKubernetes, startFakeKubernetes } from "@deckhand/testkit";
import { BatchV1Api, CoreV1Api, KubeConfig, type V1Job, Watch } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { apiStatus } from "./kubernetes-status.ts";

const setup = await containerTestSetup();
let cluster: FakeKubernetes;
let volume: string;
let batch: BatchV1Api;
let core: CoreV1Api;
let kubeConfig: KubeConfig;

beforeEach(async () => {
  volume = mkdtempSync(join(tmpdir(), "deckhand-fake-kubernetes-"));
  if (setup.runtime === null) return;
  cluster = await startFakeKubernetes({
    cli: setup.runtime as ContainerRuntime,
    claims: { data: volume },
    bookmarkIntervalMs: 100,
  });
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(cluster.kubeconfig());
  batch = kubeConfig.makeApiClient(BatchV1Api);
  core = kubeConfig.makeApiClient(CoreV1Api);
});

afterEach(async () => {
  await cluster?.close();
  rmSync(volume, { recursive: true, force: true });
});

function job(name: string, script: string): V1Job {
  return {
    apiVersion: "batch/v1",
    kind: "Job",
    metadata: { name },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: "Never",
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: "main",
              image: setup.image,
              imagePullPolicy: "IfNotPresent",
              command: ["/bin/sh", "-c", script],
            },
          ],
        },
      },
    },
  };
}

async function failure(promise: Promise<unknown>) {
  return apiStatus(
    await promise.then(
      () => null,
      (error: unknown) => error,
    ),
  );
}

describe.skipIf(setup.runtime === null)("the fake Kubernetes API server", () => {
  it("answers errors with Status bodies as the API server does", async () => {
    expect(
      await failure(batch.readNamespacedJob({ name: "absent", namespace: "default" })),
    ).toEqual({
      code: 404,
      status: expect.objectContaining({
        kind: "Status",
        status: "Failure",
        reason: "NotFound",
        message: 'jobs.batch "absent" not found',
        details: { name: "absent", group: "batch", kind: "jobs" },
      }),
    });
    await batch.createNamespacedJob({ namespace: "default", body: job("twice", "true") });
    expect(
      await failure(
        batch.createNamespacedJob({ namespace: "default", body: job("twice", "true") }),
      ),
    ).toMatchObject({
      code: 409,
      status: { reason: "AlreadyExists", message: 'jobs.batch "twice" already exists' },
    });
    const invalid = job("Not_A_Name", "true");
    invalid.spec!.template.spec!.restartPolicy = "Always";
    expect(
      await failure(batch.createNamespacedJob({ namespace: "default", body: invalid })),
    ).toMatchObject({
      code: 422,
      status: {
        reason: "Invalid",
        message: expect.stringMatching(
          /^Job\.batch "Not_A_Name" is invalid: metadata\.name: Invalid value: .*spec\.template\.spec\.restartPolicy: Unsupported value: "Always"/,
        ),
      },
    });
    expect(
      await failure(batch.createNamespacedJob({ namespace: "nowhere", body: job("x", "true") })),
    ).toMatchObject({
      code: 404,
      status: { reason: "NotFound", message: 'namespaces "nowhere" not found' },
    });
    const stranger = new KubeConfig();
    stranger.loadFromString(cluster.kubeconfig().replace(cluster.token, "wrong"));
    expect(
      await failure(stranger.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: "default" })),
    ).toMatchObject({ code: 401 });
  });

  it("runs a Job's pod Pending → Running → Succeeded and serves its log", async () => {
    // Watched from before the Job exists, so the pod's first state is seen too.
    const selector = "batch.kubernetes.io/job-name=ok";
    const phases: string[] = [];
    const list = await core.listNamespacedPod({ namespace: "default", labelSelector: selector });
    await new Watch(kubeConfig).watch(
      "/api/v1/namespaces/default/pods",
      {
        labelSelector: selector,
        resourceVersion: list.metadata!.resourceVersion!,
        allowWatchBookmarks: true,
      },
      (type, object) => {
        const phase = (object as { status?: { phase?: string } }).status?.phase;
        if (type !== "BOOKMARK" && phase !== undefined && phases.at(-1) !== phase)
          phases.push(phase);
      },
      () => {},
    );
    await batch.createNamespacedJob({
      namespace: "default",
      body: job("ok", "echo hi; sleep 0.5"),
    });
    expect(await eventually(() => phases.includes("Succeeded"), 30_000)).toBe(true);
    expect(phases).toEqual(["Pending", "Running", "Succeeded"]);
    const [pod] = (await core.listNamespacedPod({ namespace: "default", labelSelector: selector }))
      .items;
    expect(
      await core.readNamespacedPodLog({
        name: pod!.metadata!.name!,
        namespace: "default",
        container: "main",
      }),
    ).toBe("hi\n");
    expect(
      await eventually(() => {
        const finished = cluster.objects("jobs")[0];
        return finished?.status?.conditions?.some(
          (condition: { type: string }) => condition.type === "Complete",
        );
      }, 10_000),
    ).toBe(true);
    cluster.dropWatches();
  });

  it("orphans a Job's pods by default, and removes them with Background or Foreground", async () => {
    for (const [name, policy] of [
      ["orphaned", undefined],
      ["background", "Background"],
      ["foreground", "Foreground"],
    ] as const) {
      await batch.createNamespacedJob({ namespace: "default", body: job(name, "sleep 300") });
      expect(
        await eventually(
          () =>
            cluster
              .objects("pods")
              .some(
                (pod) => pod.metadata.name?.startsWith(name) && pod.status?.phase === "Running",
              ),
          30_000,
        ),
        `${name}: its pod runs`,
      ).toBe(true);
      await batch.deleteNamespacedJob({
        name,
        namespace: "default",
        ...(policy ? { propagationPolicy: policy } : {}),
      });
      const owned = () =>
        cluster.objects("pods").filter((pod) => pod.metadata.name?.startsWith(name));
      if (policy === undefined) {
        // Kept, without its owner, as a real cluster does (and warns about).
        expect(
          await eventually(() => owned()[0]?.metadata.ownerReferences?.length === 0, 10_000),
          "the orphan loses its owner",
        ).toBe(true);
        expect(owned()).toHaveLength(1);
        const deletion = cluster.requests.filter((request) => request.method === "DELETE").at(-1);
        expect(deletion?.query.propagationPolicy).toBeUndefined();
        await core.deleteNamespacedPod({ name: owned()[0]!.metadata.name!, namespace: "default" });
      } else if (policy === "Foreground") {
        // Asked in the foreground; a Job still there while its pod goes is marked so. When the
        // two go is the fake's timing (the pod's process may end before this looks), not asserted.
        const deletion = cluster.requests.filter((request) => request.method === "DELETE").at(-1);
        expect(deletion?.query.propagationPolicy).toBe("Foreground");
        for (const job of cluster.objects("jobs")) {
          expect(job.metadata.finalizers).toEqual(["foregroundDeletion"]);
        }
      }
      expect(
        await eventually(
          () => owned().length === 0 && cluster.objects("jobs").length === 0,
          30_000,
        ),
        `${name}: Job and pod gone`,
      ).toBe(true);
    }
  }, 120_000);
});
