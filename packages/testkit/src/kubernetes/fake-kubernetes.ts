// A Kubernetes API server on loopback for what Deckhand's kubernetes runtime uses: Jobs, Pods,
// their logs and Secrets, with the contract @kubernetes/client-node relies on — lists with a
// resourceVersion, watches from a version (with bookmarks, 410 Expired for a compacted one),
// log `follow` streams that end when the container does, Status bodies for 401/404/409/422 and
// 400, and deletion propagation (Background, Foreground, the Orphan default of batch/v1 Jobs).
// Pods run for real, in Podman on this machine (see fake-kubelet.ts). No cluster runs here, so
// this is what the runtime is tested against.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FakeKubeletContainerCli } from "./fake-kubelet.ts";
import { FakeControllers, type FakeNode, type Propagation } from "./fake-kubernetes-controllers.ts";
import {
  type KindName,
  type KubeObject,
  nameProblem,
  newMetadata,
  parseLabelSelector,
  type Status,
  statuses,
} from "./fake-kubernetes-objects.ts";
import { FakeKubernetesStore, type WatchEventType, withKind } from "./fake-kubernetes-store.ts";

export interface FakeKubernetesOptions {
  /** The container CLI pods run with (Podman with this machine's flags). */
  cli: FakeKubeletContainerCli;
  /** PersistentVolumeClaim name → the host directory that is its volume. */
  claims?: Record<string, string>;
  /** Namespaces that exist; `default` always does. */
  namespaces?: string[];
  /** How often watches that asked for bookmarks get one; 1 s by default (a real server: ~1 min). */
  bookmarkIntervalMs?: number;
  /** The one node's name and labels. */
  node?: Partial<FakeNode>;
}

export interface FakeKubernetesRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
}

export interface FakeKubernetes {
  /** The API server's URL (https on 127.0.0.1). */
  readonly url: string;
  /** The PEM certificate the server presents (self-signed, for 127.0.0.1). */
  readonly certificate: string;
  /** The bearer token requests must carry. */
  readonly token: string;
  readonly nodeName: string;
  /** A kubeconfig (JSON, which is YAML) whose current context is this server. */
  kubeconfig(namespace?: string): string;
  /** Writes `kubeconfig()` to `path` and returns it. */
  writeKubeconfig(path: string, namespace?: string): string;
  /** Stored objects of a kind (copies), in one namespace or all. */
  objects(kind: KindName, namespace?: string): KubeObject[];
  /** Every request, in order. */
  readonly requests: FakeKubernetesRequest[];
  /** What the kubelet's log of a container holds. */
  containerLog(namespace: string, pod: string, container: string): string | undefined;
  /** Ends every open watch, as a server restart or a load balancer's idle timeout does. */
  dropWatches(): void;
  /** Forgets the change history: watches resuming from an older version get 410 Expired. */
  compact(): void;
  /** Ends log follow streams after this many bytes (a dropped connection); null: never. */
  cutLogFollowsAfterBytes: number | null;
  close(): Promise<void>;
}

interface OpenWatch {
  end(): void;
}

function send(response: ServerResponse, code: number, body: unknown, headers = {}): void {
  response.writeHead(code, { "Content-Type": "application/json", ...headers });
  response.end(JSON.stringify(body));
}

function sendStatus(response: ServerResponse, status: Status): void {
  send(response, status.code, status);
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return Symbol.for("invalid-json");
  }
}

const COLLECTION =
  /^\/(?:api\/v1|apis\/batch\/v1)\/namespaces\/([^/]+)\/(pods|secrets|jobs)(?:\/([^/]+))?(?:\/(log))?$/;

/** Starts the fake API server with its controllers and kubelet; `close` stops every pod. */
export async function startFakeKubernetes(options: FakeKubernetesOptions): Promise<FakeKubernetes> {
  const store = new FakeKubernetesStore();
  const namespaces = new Set(["default", ...(options.namespaces ?? [])]);
  const node: FakeNode = {
    name: options.node?.name ?? "fake-node",
    labels: {
      "kubernetes.io/hostname": options.node?.name ?? "fake-node",
      "kubernetes.io/os": "linux",
      "kubernetes.io/arch": process.arch === "arm64" ? "arm64" : "amd64",
      ...(options.node?.labels ?? {}),
    },
  };
  const controllers = new FakeControllers(store, node, options.cli, options.claims ?? {});
  const token = randomBytes(16).toString("hex");
  const requests: FakeKubernetesRequest[] = [];
  const watches = new Set<OpenWatch>();
  const bookmarkIntervalMs = options.bookmarkIntervalMs ?? 1_000;
  const fake = { cutLogFollowsAfterBytes: null as number | null };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? "/", "http://fake");
    const query = Object.fromEntries(url.searchParams);
    const body = request.method === "GET" ? undefined : await readBody(request);
    requests.push({ method: request.method ?? "GET", path: url.pathname, query, body });
    if (request.headers.authorization !== `Bearer ${token}`) {
      sendStatus(response, statuses.unauthorized());
      return;
    }
    const match = COLLECTION.exec(url.pathname);
    const group = url.pathname.startsWith("/apis/batch/v1/") ? "batch" : "";
    if (match === null || (match[2] === "jobs") !== (group === "batch")) {
      response.writeHead(404, { "Content-Type": "text/plain" });
      response.end("404 page not found\n");
      return;
    }
    const [, namespace, resource, name, sub] = match as unknown as [
      string,
      string,
      KindName,
      string?,
      string?,
    ];
    if (!namespaces.has(namespace)) {
      sendStatus(response, statuses.namespaceNotFound(namespace));
      return;
    }
    if (body === Symbol.for("invalid-json")) {
      sendStatus(response, statuses.badRequest("the body of the request was in an unknown format"));
      return;
    }
    if (sub === "log" && resource === "pods" && request.method === "GET" && name) {
      serveLog(namespace, name, query, response);
    } else if (name === undefined && request.method === "GET") {
      if (query.watch === "true" || query.watch === "1")
        serveWatch(resource, namespace, query, request, response);
      else serveList(resource, namespace, query, response);
    } else if (name === undefined && request.method === "POST") {
      create(resource, namespace, body as KubeObject, response);
    } else if (name !== undefined && sub === undefined && request.method === "GET") {
      const found = store.get(resource, namespace, name);
      if (found === undefined) sendStatus(response, statuses.notFound(resource, name));
      else send(response, 200, withKind(resource, found));
    } else if (name !== undefined && sub === undefined && request.method === "DELETE") {
      remove(
        resource,
        namespace,
        name,
        query,
        body as Record<string, unknown> | undefined,
        response,
      );
    } else {
      sendStatus(response, {
        ...statuses.badRequest("the server does not allow this method on the requested resource"),
        code: 405,
        reason: "MethodNotAllowed",
      });
    }
  };

  function serveList(
    kind: KindName,
    namespace: string,
    query: Record<string, string>,
    response: ServerResponse,
  ) {
    let items: KubeObject[];
    try {
      items = store.list(kind, namespace, query.labelSelector ?? "");
    } catch (error) {
      sendStatus(response, statuses.badRequest((error as Error).message));
      return;
    }
    const kindName = withKind(kind, { metadata: {} }).kind;
    send(response, 200, {
      kind: `${kindName}List`,
      apiVersion: kind === "jobs" ? "batch/v1" : "v1",
      metadata: { resourceVersion: String(store.resourceVersion) },
      items,
    });
  }

  function serveWatch(
    kind: KindName,
    namespace: string,
    query: Record<string, string>,
    request: IncomingMessage,
    response: ServerResponse,
  ) {
    let selector: ReturnType<typeof parseLabelSelector>;
    try {
      selector = parseLabelSelector(query.labelSelector ?? "");
    } catch (error) {
      sendStatus(response, statuses.badRequest((error as Error).message));
      return;
    }
    response.writeHead(200, { "Content-Type": "application/json", "Transfer-Encoding": "chunked" });
    const write = (type: string, object: unknown) => {
      if (!response.writableEnded) response.write(`${JSON.stringify({ type, object })}\n`);
    };
    let unregister: (() => void) | null = null;
    const timers: NodeJS.Timeout[] = [];
    const open: OpenWatch = {
      end: () => {
        unregister?.();
        for (const timer of timers) clearTimeout(timer);
        watches.delete(open);
        if (!response.writableEnded) response.end();
      },
    };
    watches.add(open);
    request.on("close", open.end);
    unregister = store.watch(
      { kind, namespace, selector, send: (type: WatchEventType, object) => write(type, object) },
      query.resourceVersion,
    );
    if (unregister === null) {
      // What a real server does for a version etcd has compacted: an ERROR event, then the end.
      write("ERROR", statuses.expired(query.resourceVersion ?? "", store.oldestResourceVersion));
      open.end();
      return;
    }
    if (query.allowWatchBookmarks === "true") {
      const kindName = withKind(kind, { metadata: {} });
      const bookmark = setInterval(() => {
        write("BOOKMARK", {
          kind: kindName.kind,
          apiVersion: kindName.apiVersion,
          metadata: { resourceVersion: String(store.resourceVersion) },
        });
      }, bookmarkIntervalMs);
      timers.push(bookmark);
    }
    const timeoutSeconds = Number(query.timeoutSeconds);
    if (Number.isFinite(timeoutSeconds) && timeoutSeconds > 0) {
      timers.push(setTimeout(open.end, timeoutSeconds * 1000));
    }
  }

  function serveLog(
    namespace: string,
    name: string,
    query: Record<string, string>,
    response: ServerResponse,
  ) {
    const pod = store.get("pods", namespace, name);
    if (pod === undefined) {
      sendStatus(response, statuses.notFound("pods", name));
      return;
    }
    const containers: string[] = pod.spec.containers.map(
      (container: { name: string }) => container.name,
    );
    const container = query.container ?? (containers.length === 1 ? containers[0] : undefined);
    if (container === undefined) {
      sendStatus(
        response,
        statuses.badRequest(
          `a container name must be specified for pod ${name}, choose one of: [${containers.join(" ")}]`,
        ),
      );
      return;
    }
    if (!containers.includes(container)) {
      sendStatus(
        response,
        statuses.badRequest(`container ${container} is not valid for pod ${name}`),
      );
      return;
    }
    const state = (pod.status?.containerStatuses ?? []).find(
      (status: { name: string }) => status.name === container,
    )?.state;
    const log = controllers.kubelet.log(namespace, name, container);
    if (log === undefined || state === undefined || state.waiting !== undefined) {
      const reason = state?.waiting?.reason ?? "ContainerCreating";
      sendStatus(
        response,
        statuses.badRequest(
          `container "${container}" in pod "${name}" is waiting to start: ${reason}`,
        ),
      );
      return;
    }
    response.writeHead(200, { "Content-Type": "text/plain", "Transfer-Encoding": "chunked" });
    let sent = 0;
    const cut = fake.cutLogFollowsAfterBytes;
    const write = (chunk: Buffer): boolean => {
      if (query.follow === "true" && cut !== null && sent + chunk.length > cut) {
        response.end(chunk.subarray(0, Math.max(0, cut - sent)));
        return false;
      }
      sent += chunk.length;
      response.write(chunk);
      return true;
    };
    for (const chunk of log.chunks) if (!write(chunk)) return;
    if (query.follow !== "true" || log.done) {
      response.end();
      return;
    }
    const stop = log.follow((chunk) => {
      if (chunk === null) {
        response.end();
        stop();
      } else if (!write(chunk)) {
        stop();
      }
    });
    response.on("close", stop);
  }

  function create(kind: KindName, namespace: string, body: KubeObject, response: ServerResponse) {
    if (typeof body !== "object" || body === null || typeof body.metadata !== "object") {
      sendStatus(response, statuses.badRequest("the body of the request was in an unknown format"));
      return;
    }
    const name = body.metadata.name ?? "";
    const causes: { field: string; message: string }[] = [];
    const problem = nameProblem(kind, name);
    if (problem !== null) causes.push({ field: "metadata.name", message: problem });
    if (kind === "jobs") causes.push(...jobProblems(body));
    if (causes.length > 0) {
      sendStatus(response, statuses.invalid(kind, name, causes));
      return;
    }
    if (store.get(kind, namespace, name) !== undefined) {
      sendStatus(response, statuses.alreadyExists(kind, name));
      return;
    }
    const object = defaults(kind, {
      ...structuredClone(body),
      metadata: newMetadata(body.metadata, namespace),
    });
    const stored = store.add(kind, object);
    if (kind === "jobs") controllers.jobCreated(stored);
    send(response, 201, withKind(kind, stored));
  }

  function remove(
    kind: KindName,
    namespace: string,
    name: string,
    query: Record<string, string>,
    body: Record<string, unknown> | undefined,
    response: ServerResponse,
  ) {
    const found = store.get(kind, namespace, name);
    if (found === undefined) {
      sendStatus(response, statuses.notFound(kind, name));
      return;
    }
    const policy = (query.propagationPolicy ?? body?.propagationPolicy) as Propagation | undefined;
    const orphan = query.orphanDependents ?? body?.orphanDependents;
    if (kind === "jobs") {
      // batch/v1 Jobs orphan their pods unless told otherwise, and the server warns about it.
      const propagation: Propagation =
        policy ?? (orphan === false || orphan === "false" ? "Background" : "Orphan");
      const headers =
        policy === undefined && orphan === undefined
          ? {
              Warning:
                '299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"',
            }
          : {};
      const marked = controllers.deleteJob(found, propagation);
      if (marked !== null) send(response, 200, withKind(kind, marked), headers);
      else send(response, 200, statuses.success(kind, name, found.metadata.uid!), headers);
      return;
    }
    if (kind === "pods") {
      const grace = query.gracePeriodSeconds ?? body?.gracePeriodSeconds;
      const marked = controllers.deletePod(
        namespace,
        name,
        grace === undefined ? undefined : Number(grace),
      );
      send(response, 200, withKind(kind, marked ?? found));
      return;
    }
    store.remove(kind, namespace, name);
    send(response, 200, statuses.success(kind, name, found.metadata.uid!));
  }

  const tls = selfSignedCertificate();
  const server = createServer(tls, (request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) send(response, 500, statuses.badRequest(String(error)));
      else response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const kubeconfig = (namespace = "default") =>
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "fake",
          cluster: {
            server: url,
            "certificate-authority-data": Buffer.from(tls.cert).toString("base64"),
          },
        },
      ],
      users: [{ name: "fake", user: { token } }],
      contexts: [{ name: "fake", context: { cluster: "fake", user: "fake", namespace } }],
      "current-context": "fake",
    });
  return {
    url,
    certificate: tls.cert,
    token,
    nodeName: node.name,
    kubeconfig,
    writeKubeconfig(path, namespace) {
      writeFileSync(path, kubeconfig(namespace), { mode: 0o600 });
      return path;
    },
    objects: (kind, namespace) => store.list(kind, namespace ?? null),
    requests,
    containerLog: (namespace, pod, container) =>
      controllers.kubelet.log(namespace, pod, container)?.text().toString("utf8"),
    dropWatches() {
      for (const watch of [...watches]) watch.end();
    },
    compact: () => store.compact(),
    get cutLogFollowsAfterBytes() {
      return fake.cutLogFollowsAfterBytes;
    },
    set cutLogFollowsAfterBytes(value: number | null) {
      fake.cutLogFollowsAfterBytes = value;
    },
    async close() {
      for (const watch of [...watches]) watch.end();
      await controllers.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A key and self-signed certificate for 127.0.0.1, made with openssl for each fake: the client
 * refuses plain HTTP, as it should, so the fake speaks TLS like every API server.
 */
function selfSignedCertificate(): { key: string; cert: string } {
  const directory = mkdtempSync(join(tmpdir(), "fake-kubernetes-tls-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=fake-kubernetes",
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        join(directory, "key.pem"),
        "-out",
        join(directory, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    return {
      key: readFileSync(join(directory, "key.pem"), "utf8"),
      cert: readFileSync(join(directory, "cert.pem"), "utf8"),
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Validation of a Job the API server does (the part a runtime can get wrong). */
function jobProblems(job: KubeObject): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  const pod = job.spec?.template?.spec;
  if (pod === undefined) {
    return [{ field: "spec.template.spec.containers", message: "Required value" }];
  }
  if (pod.restartPolicy !== "Never" && pod.restartPolicy !== "OnFailure") {
    problems.push({
      field: "spec.template.spec.restartPolicy",
      message: `${pod.restartPolicy === undefined ? "Required value" : `Unsupported value: "${pod.restartPolicy}"`}: supported values: "OnFailure", "Never"`,
    });
  }
  const containers = pod.containers ?? [];
  if (containers.length === 0) {
    problems.push({ field: "spec.template.spec.containers", message: "Required value" });
  }
  containers.forEach((container: { name?: string; image?: string }, index: number) => {
    if (!container.name)
      problems.push({
        field: `spec.template.spec.containers[${index}].name`,
        message: "Required value",
      });
    if (!container.image)
      problems.push({
        field: `spec.template.spec.containers[${index}].image`,
        message: "Required value",
      });
  });
  return problems;
}

/** What the API server fills in on create (the defaults a client reads back). */
function defaults(kind: KindName, object: KubeObject): KubeObject {
  if (kind === "secrets") {
    const data: Record<string, string> = { ...((object.data as Record<string, string>) ?? {}) };
    for (const [key, value] of Object.entries(
      (object.stringData as Record<string, string>) ?? {},
    )) {
      data[key] = Buffer.from(value, "utf8").toString("base64");
    }
    const { stringData: _stringData, ...rest } = object;
    return { ...rest, data, type: object.type ?? "Opaque" };
  }
  if (kind !== "jobs") return object;
  const uid = object.metadata.uid!;
  const name = object.metadata.name!;
  const controllerLabels = {
    "batch.kubernetes.io/controller-uid": uid,
    "batch.kubernetes.io/job-name": name,
    "controller-uid": uid,
    "job-name": name,
  };
  const spec = object.spec;
  const podSpec = spec.template.spec;
  return {
    ...object,
    spec: {
      parallelism: 1,
      completions: 1,
      backoffLimit: 6,
      completionMode: "NonIndexed",
      suspend: false,
      podReplacementPolicy: "TerminatingOrFailed",
      manualSelector: false,
      ...spec,
      selector: { matchLabels: { "batch.kubernetes.io/controller-uid": uid } },
      template: {
        ...spec.template,
        metadata: {
          ...(spec.template.metadata ?? {}),
          labels: { ...(spec.template.metadata?.labels ?? {}), ...controllerLabels },
        },
        spec: {
          dnsPolicy: "ClusterFirst",
          schedulerName: "default-scheduler",
          securityContext: {},
          terminationGracePeriodSeconds: 30,
          ...podSpec,
          containers: podSpec.containers.map(
            (container: { image: string; imagePullPolicy?: string }) => ({
              terminationMessagePath: "/dev/termination-log",
              terminationMessagePolicy: "File",
              ...container,
              imagePullPolicy:
                container.imagePullPolicy ??
                (/:latest$/.test(container.image) || !/:[^/]+$/.test(container.image)
                  ? "Always"
                  : "IfNotPresent"),
            }),
          ),
        },
      },
    },
    status: {},
  };
}
