// deploy/kubernetes against the Kubernetes API schemas (kubernetes-models, generated from the
// API's OpenAPI definitions), and against what this runtime expects of them: the executor's
// config.json parses, its Role grants exactly the calls the runtime makes, and step pods run as
// an account with no rights and no token.
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { NODE_NAME_ENV, parseKubernetesRuntimeConfig } from "./kubernetes-config.ts";
import { COMPONENT_LABEL, STEP_COMPONENT } from "./step-job.ts";

const directory = fileURLToPath(new URL("../../../deploy/kubernetes/", import.meta.url));

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  // biome-ignore lint/suspicious/noExplicitAny: manifests of many kinds, read field by field.
  [field: string]: any;
}

function manifests(): { file: string; manifest: Manifest }[] {
  const found: { file: string; manifest: Manifest }[] = [];
  for (const file of readdirSync(directory)
    .filter((name) => name.endsWith(".yaml"))
    .sort()) {
    if (file === "kustomization.yaml") continue;
    for (const document of parseAllDocuments(readFileSync(`${directory}${file}`, "utf8"))) {
      if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0]!.message}`);
      const manifest = document.toJSON() as Manifest | null;
      if (manifest !== null) found.push({ file, manifest });
    }
  }
  return found;
}

/** Validates one object with the kubernetes-models class of its apiVersion and kind. */
async function validate(manifest: Manifest): Promise<void> {
  const [group, version] = manifest.apiVersion.includes("/")
    ? manifest.apiVersion.split("/")
    : [null, manifest.apiVersion];
  const module = (await import(
    group === null ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`
  )) as Record<string, new (data: unknown) => { validate(): void }>;
  const Model = module[manifest.kind];
  if (Model === undefined) throw new Error(`no schema for ${manifest.apiVersion} ${manifest.kind}`);
  new Model(manifest).validate();
}

function find(kind: string, name: string): Manifest {
  const found = manifests().find(
    ({ manifest }) => manifest.kind === kind && manifest.metadata.name === name,
  );
  if (found === undefined) throw new Error(`deploy/kubernetes has no ${kind} ${name}`);
  return found.manifest;
}

describe("deploy/kubernetes", () => {
  it("holds only objects the Kubernetes schemas accept", async () => {
    const all = manifests();
    expect(all.length).toBeGreaterThan(10);
    for (const { file, manifest } of all) {
      await expect(
        validate(manifest),
        `${file}: ${manifest.kind} ${manifest.metadata.name}`,
      ).resolves.toBeUndefined();
    }
  });

  it("fails an object the schemas refuse (the check above can fail)", async () => {
    const deployment = structuredClone(find("Deployment", "deckhand-executor"));
    deployment.spec.replicas = "one";
    await expect(validate(deployment)).rejects.toThrow(/replicas must be integer/);
    const missing = structuredClone(find("Deployment", "deckhand-server"));
    delete missing.spec.template.spec.containers[0].name;
    await expect(validate(missing)).rejects.toThrow(
      /containers\/0 must have required property name/,
    );
    await expect(
      validate({ apiVersion: "batch/v1", kind: "Jobb", metadata: { name: "x" } }),
    ).rejects.toThrow(/no schema for batch\/v1 Jobb/);
  });

  it("lists every manifest in its kustomization", () => {
    const kustomization = parseAllDocuments(
      readFileSync(`${directory}kustomization.yaml`, "utf8"),
    )[0]!.toJSON() as { resources: string[] };
    const files = readdirSync(directory).filter(
      (name) => name.endsWith(".yaml") && name !== "kustomization.yaml",
    );
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it("configures the executor's runtime with a config.json this runtime accepts, on its volume", () => {
    const configMap = find("ConfigMap", "deckhand-executor-config");
    const file = JSON.parse(configMap.data["config.json"]) as { kubernetes: unknown };
    const config = parseKubernetesRuntimeConfig(file.kubernetes);
    const executor = find("Deployment", "deckhand-executor").spec.template.spec;
    const volume = executor.volumes.find(
      (candidate: { persistentVolumeClaim?: { claimName: string } }) =>
        candidate.persistentVolumeClaim?.claimName === config.workVolume.claimName,
    );
    expect(volume).toBeDefined();
    expect(find("PersistentVolumeClaim", config.workVolume.claimName)).toBeDefined();
    const container = executor.containers[0];
    expect(container.volumeMounts).toContainEqual({
      name: volume.name,
      mountPath: config.workVolume.mountPath,
    });
    // Its data directory is the volume, so checkouts are on it.
    expect(container.args.join(" ")).toContain(`--data-dir ${config.workVolume.mountPath}`);
    expect(container.env).toContainEqual({
      name: NODE_NAME_ENV,
      valueFrom: { fieldRef: { fieldPath: "spec.nodeName" } },
    });
    expect(config.namespace).toBe(configMap.metadata.namespace);
  });

  it("gives the executor exactly the API calls the runtime makes, and steps none", () => {
    const role = find("Role", "deckhand-executor");
    const grants = role.rules.flatMap(
      (rule: { apiGroups: string[]; resources: string[]; verbs: string[] }) =>
        rule.resources.flatMap((resource) =>
          rule.verbs.map((verb) => `${rule.apiGroups[0] || "core"}/${resource}:${verb}`),
        ),
    );
    expect(grants.sort()).toEqual(
      [
        "batch/jobs:create",
        "batch/jobs:delete",
        "batch/jobs:get",
        "core/pods:get",
        "core/pods:list",
        "core/pods:watch",
        "core/pods/log:get",
        "core/secrets:create",
        "core/secrets:delete",
      ].sort(),
    );
    const config = parseKubernetesRuntimeConfig(
      JSON.parse(find("ConfigMap", "deckhand-executor-config").data["config.json"]).kubernetes,
    );
    const account = find("ServiceAccount", config.serviceAccountName ?? "deckhand-step");
    expect(account.automountServiceAccountToken).toBe(false);
    const bindings = manifests().filter(({ manifest }) => manifest.kind.endsWith("RoleBinding"));
    for (const { manifest } of bindings) {
      expect(manifest.subjects.map((subject: { name: string }) => subject.name)).not.toContain(
        account.metadata.name,
      );
    }
  });

  it("selects step pods in its NetworkPolicies by the labels the runtime sets", () => {
    for (const name of ["deckhand-steps-no-network", "deckhand-steps-model-proxy"]) {
      const policy = find("NetworkPolicy", name);
      expect(policy.spec.podSelector.matchLabels[COMPONENT_LABEL]).toBe(STEP_COMPONENT);
      expect(policy.spec.policyTypes).toContain("Egress");
    }
  });
});
