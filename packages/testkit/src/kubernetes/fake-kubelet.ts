// The fake cluster's one node: runs a scheduled pod's containers with Podman, as a kubelet runs
// them with its container runtime. Volumes are host directories (a claim's directory, sub-paths
// made when missing, as the kubelet does), env comes from the pod's Secrets, the image must be
// in Podman's store (nothing is pulled: the reasons are those a kubelet gives), and stdout and
// stderr go to one log per container, interleaved, as a kubelet's log files do.
import { execFile, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type KubeObject, kubeTime } from "./fake-kubernetes-objects.ts";

/** The container CLI pods run with (Podman, with the flags this machine needs). */
export interface FakeKubeletContainerCli {
  readonly binary: string;
  readonly globalArgs: readonly string[];
  readonly runArgs: readonly string[];
}

export interface FakeKubeletHost {
  cli: FakeKubeletContainerCli;
  /** PersistentVolumeClaim name → the host directory that is its volume. */
  claims: Readonly<Record<string, string>>;
  secret(namespace: string, name: string): KubeObject | undefined;
  /** Applies a change to the stored pod (a status update); ignored once the pod is gone. */
  update(namespace: string, name: string, change: (pod: KubeObject) => void): void;
}

/** One container's log: what it wrote so far, and who follows it. */
export class ContainerLog {
  readonly chunks: Buffer[] = [];
  done = false;
  readonly #followers = new Set<(chunk: Buffer | null) => void>();

  append(chunk: Buffer): void {
    this.chunks.push(chunk);
    for (const follower of this.#followers) follower(chunk);
  }

  end(): void {
    this.done = true;
    for (const follower of this.#followers) follower(null);
    this.#followers.clear();
  }

  text(): Buffer {
    return Buffer.concat(this.chunks);
  }

  follow(listener: (chunk: Buffer | null) => void): () => void {
    this.#followers.add(listener);
    return () => this.#followers.delete(listener);
  }
}

interface RunningPod {
  names: string[];
  logs: Map<string, ContainerLog>;
  exited: Promise<void>;
  scratch: string;
}

/** Why a container cannot be created: a waiting reason and message, as a kubelet reports. */
class Waiting extends Error {
  readonly reason: string;

  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

export class FakeKubelet {
  readonly #host: FakeKubeletHost;
  readonly #pods = new Map<string, RunningPod>();
  readonly #images = new Map<string, boolean>();

  constructor(host: FakeKubeletHost) {
    this.#host = host;
  }

  log(namespace: string, pod: string, container: string): ContainerLog | undefined {
    return this.#pods.get(`${namespace}/${pod}`)?.logs.get(container);
  }

  /** Starts a scheduled pod: its containers are created (or wait with a reason) and run. */
  start(pod: KubeObject): void {
    const namespace = pod.metadata.namespace!;
    const name = pod.metadata.name!;
    const scratch = mkdtempSync(join(tmpdir(), "fake-kubelet-"));
    const running: RunningPod = { names: [], logs: new Map(), exited: Promise.resolve(), scratch };
    this.#pods.set(`${namespace}/${name}`, running);
    const containers: KubeObject["spec"][] = pod.spec.containers;
    for (const container of containers) running.logs.set(container.name, new ContainerLog());
    let prepared: { args: string[]; env: NodeJS.ProcessEnv }[];
    try {
      prepared = containers.map((container) => this.#prepare(pod, container, scratch));
    } catch (error) {
      if (!(error instanceof Waiting)) throw error;
      this.#host.update(namespace, name, (stored) => {
        stored.status.containerStatuses = containers.map((container) => ({
          name: container.name,
          image: container.image,
          imageID: "",
          ready: false,
          restartCount: 0,
          started: false,
          state: { waiting: { reason: error.reason, message: error.message } },
        }));
      });
      return;
    }
    running.exited = Promise.all(
      containers.map((container, index) => this.#run(pod, container, prepared[index]!, running)),
    ).then(() => {
      this.#host.update(namespace, name, (stored) => {
        const statuses: KubeObject["status"][] = stored.status.containerStatuses ?? [];
        const failed = statuses.some((status) => status.state?.terminated?.exitCode !== 0);
        stored.status.phase = failed ? "Failed" : "Succeeded";
        stored.status.conditions = readiness(false, "PodCompleted");
      });
    });
  }

  /**
   * Stops a pod's containers within the grace period (TERM, then KILL), as a deletion does. A
   * container still being created is not there to stop yet: stopping is tried again until the
   * pod's processes have ended.
   */
  async kill(namespace: string, name: string, graceSeconds: number): Promise<void> {
    const running = this.#pods.get(`${namespace}/${name}`);
    if (running === undefined) return;
    let exited = false;
    void running.exited.then(() => {
      exited = true;
    });
    while (!exited) {
      await Promise.all(
        running.names.map(
          (container) =>
            new Promise<void>((resolve) => {
              execFile(
                this.#host.cli.binary,
                [
                  ...this.#host.cli.globalArgs,
                  "stop",
                  "--ignore",
                  "-t",
                  String(graceSeconds),
                  container,
                ],
                () => resolve(),
              );
            }),
        ),
      );
      if (!exited) await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /** Forgets a removed pod and its scratch space (emptyDir volumes). */
  forget(namespace: string, name: string): void {
    const running = this.#pods.get(`${namespace}/${name}`);
    if (running === undefined) return;
    rmSync(running.scratch, { recursive: true, force: true });
    this.#pods.delete(`${namespace}/${name}`);
  }

  async close(): Promise<void> {
    for (const key of [...this.#pods.keys()]) {
      const [namespace, name] = key.split("/") as [string, string];
      await this.kill(namespace, name, 0);
      this.forget(namespace, name);
    }
  }

  #imagePresent(image: string): boolean {
    let present = this.#images.get(image);
    if (present === undefined) {
      const result = spawnSync(
        this.#host.cli.binary,
        [...this.#host.cli.globalArgs, "image", "exists", image],
        { stdio: "ignore" },
      );
      present = result.status === 0;
      this.#images.set(image, present);
    }
    return present;
  }

  /** The `podman run` arguments and environment of one container, or why it must wait. */
  #prepare(
    pod: KubeObject,
    container: KubeObject["spec"],
    scratch: string,
  ): { args: string[]; env: NodeJS.ProcessEnv } {
    const namespace = pod.metadata.namespace!;
    const image: string = container.image;
    // No registry is reachable from this machine: a pull, which Always asks for, fails.
    if (container.imagePullPolicy === "Always") {
      throw new Waiting("ImagePullBackOff", `Back-off pulling image "${image}"`);
    }
    if (!this.#imagePresent(image)) {
      if (container.imagePullPolicy === "Never") {
        throw new Waiting(
          "ErrImageNeverPull",
          `Container image "${image}" is not present with pull policy of Never`,
        );
      }
      throw new Waiting("ImagePullBackOff", `Back-off pulling image "${image}"`);
    }
    const env: NodeJS.ProcessEnv = { ...process.env };
    const names: string[] = [];
    const secretData = (secretName: string): Record<string, string> => {
      const secret = this.#host.secret(namespace, secretName);
      if (secret === undefined) {
        throw new Waiting("CreateContainerConfigError", `secret "${secretName}" not found`);
      }
      const data = (secret.data ?? {}) as Record<string, string>;
      return Object.fromEntries(
        Object.entries(data).map(([key, value]) => [
          key,
          Buffer.from(value, "base64").toString("utf8"),
        ]),
      );
    };
    for (const source of container.envFrom ?? []) {
      if (source.secretRef?.name) {
        for (const [key, value] of Object.entries(secretData(source.secretRef.name))) {
          env[key] = value;
          names.push(key);
        }
      }
    }
    for (const variable of container.env ?? []) {
      const fromSecret = variable.valueFrom?.secretKeyRef;
      env[variable.name] = fromSecret
        ? secretData(fromSecret.name)[fromSecret.key]
        : (variable.value ?? "");
      names.push(variable.name);
    }
    const args = ["--pull", "never", ...this.#host.cli.runArgs, "--network", "none"];
    const security = { ...(pod.spec.securityContext ?? {}), ...(container.securityContext ?? {}) };
    if (security.runAsUser !== undefined) {
      args.push("--user", `${security.runAsUser}:${security.runAsGroup ?? security.runAsUser}`);
    }
    if (security.allowPrivilegeEscalation === false) {
      args.push("--security-opt", "no-new-privileges");
    }
    for (const capability of security.capabilities?.drop ?? []) args.push("--cap-drop", capability);
    for (const mount of container.volumeMounts ?? []) {
      const source = this.#volumePath(pod, mount, scratch);
      args.push("-v", `${source}:${mount.mountPath}${mount.readOnly ? ":ro" : ""}`);
    }
    if (container.workingDir) args.push("-w", container.workingDir);
    for (const name of names) args.push("-e", name);
    const command: string[] = container.command ?? [];
    const rest: string[] = [...command.slice(1), ...(container.args ?? [])];
    if (command.length > 0) args.push("--entrypoint", command[0]!);
    args.push("--", image, ...rest);
    return { args, env };
  }

  #volumePath(pod: KubeObject, mount: { name: string; subPath?: string }, scratch: string): string {
    const volume = (pod.spec.volumes ?? []).find(
      (candidate: { name: string }) => candidate.name === mount.name,
    );
    let root: string;
    if (volume?.persistentVolumeClaim) {
      const claim = this.#host.claims[volume.persistentVolumeClaim.claimName];
      if (claim === undefined) {
        throw new Waiting(
          "ContainerCreating",
          `persistentvolumeclaim "${volume.persistentVolumeClaim.claimName}" not found`,
        );
      }
      root = claim;
    } else if (volume?.emptyDir) {
      root = join(scratch, mount.name);
      mkdirSync(root, { recursive: true });
    } else {
      throw new Waiting("CreateContainerConfigError", `volume "${mount.name}" not found`);
    }
    if (!mount.subPath) return root;
    const path = join(root, mount.subPath);
    // The kubelet makes a missing sub-path as a directory; an existing file is mounted as is.
    if (!existsSync(path)) mkdirSync(path, { recursive: true });
    return path;
  }

  #run(
    pod: KubeObject,
    container: KubeObject["spec"],
    prepared: { args: string[]; env: NodeJS.ProcessEnv },
    running: RunningPod,
  ): Promise<void> {
    const namespace = pod.metadata.namespace!;
    const podName = pod.metadata.name!;
    const cname = `fake-k8s-${pod.metadata.uid}-${container.name}`;
    running.names.push(cname);
    const log = running.logs.get(container.name)!;
    const startedAt = kubeTime();
    const child = spawn(
      this.#host.cli.binary,
      [...this.#host.cli.globalArgs, "run", "--rm", "--name", cname, ...prepared.args],
      { env: prepared.env, stdio: ["ignore", "pipe", "pipe"] },
    );
    this.#setState(namespace, podName, container, { running: { startedAt } }, true);
    child.stdout.on("data", (chunk: Buffer) => log.append(chunk));
    child.stderr.on("data", (chunk: Buffer) => log.append(chunk));
    return new Promise((resolve) => {
      child.on("close", (code, signal) => {
        // Podman's own failure (125): the container never ran its command.
        const cannotRun = code === 125;
        const exitCode = cannotRun ? 128 : (code ?? (signal === "SIGKILL" ? 137 : 143));
        const terminated = {
          exitCode,
          reason: cannotRun ? "StartError" : exitCode === 0 ? "Completed" : "Error",
          ...(cannotRun ? { message: log.text().toString("utf8").trim() } : {}),
          startedAt,
          finishedAt: kubeTime(),
          containerID: `podman://${cname}`,
        };
        this.#setState(namespace, podName, container, { terminated }, false);
        log.end();
        resolve();
      });
    });
  }

  #setState(
    namespace: string,
    podName: string,
    container: KubeObject["spec"],
    state: Record<string, unknown>,
    running: boolean,
  ): void {
    this.#host.update(namespace, podName, (stored) => {
      const others = (stored.status.containerStatuses ?? []).filter(
        (status: { name: string }) => status.name !== container.name,
      );
      stored.status.containerStatuses = [
        ...others,
        {
          name: container.name,
          image: container.image,
          imageID: `${container.image}@sha256:${"0".repeat(64)}`,
          ready: running,
          restartCount: 0,
          started: running,
          state,
        },
      ];
      if (running) {
        stored.status.phase = "Running";
        stored.status.conditions = readiness(true);
      }
    });
  }
}

/** The pod conditions of a scheduled pod, ready or not. */
export function readiness(ready: boolean, reason?: string) {
  const now = kubeTime();
  const condition = (type: string, status: boolean) => ({
    type,
    status: status ? "True" : "False",
    lastProbeTime: null,
    lastTransitionTime: now,
    ...(!status && reason ? { reason } : {}),
  });
  return [
    condition("PodReadyToStartContainers", true),
    condition("Initialized", true),
    condition("Ready", ready),
    condition("ContainersReady", ready),
    condition("PodScheduled", true),
  ];
}
