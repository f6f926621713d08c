// The shapes the Kubernetes API server answers with: Status objects for errors (404 NotFound,
// 409 AlreadyExists, 422 Invalid, 400 BadRequest, 401 Unauthorized, 410 Expired), object
// metadata as the server fills it in, and label selectors as it reads them.
import { randomUUID } from "node:crypto";

/** Any object the fake stores: metadata plus whatever the kind carries. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: KubeMetadata;
  // biome-ignore lint/suspicious/noExplicitAny: objects of several kinds, read field by field as the API server does.
  spec?: any;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  status?: any;
  [field: string]: unknown;
}

export interface KubeMetadata {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** The group, resource and kind of each stored kind, as errors and lists name them. */
export const KINDS = {
  pods: { group: "", version: "v1", kind: "Pod", resource: "pods" },
  secrets: { group: "", version: "v1", kind: "Secret", resource: "secrets" },
  jobs: { group: "batch", version: "batch/v1", kind: "Job", resource: "jobs" },
} as const;
export type KindName = keyof typeof KINDS;

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Success" | "Failure";
  message?: string;
  reason?: string;
  details?: Record<string, unknown>;
  code: number;
}

/** `jobs.batch`, `pods`: how the server names a resource in messages. */
function qualified(kind: KindName): string {
  const { group, resource } = KINDS[kind];
  return group === "" ? resource : `${resource}.${group}`;
}

function failure(
  code: number,
  reason: string,
  message: string,
  details?: Record<string, unknown>,
): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

export const statuses = {
  notFound: (kind: KindName, name: string) =>
    failure(404, "NotFound", `${qualified(kind)} "${name}" not found`, {
      name,
      ...(KINDS[kind].group !== "" ? { group: KINDS[kind].group } : {}),
      kind: KINDS[kind].resource,
    }),
  namespaceNotFound: (name: string) =>
    failure(404, "NotFound", `namespaces "${name}" not found`, { name, kind: "namespaces" }),
  alreadyExists: (kind: KindName, name: string) =>
    failure(409, "AlreadyExists", `${qualified(kind)} "${name}" already exists`, {
      name,
      ...(KINDS[kind].group !== "" ? { group: KINDS[kind].group } : {}),
      kind: KINDS[kind].resource,
    }),
  invalid: (kind: KindName, name: string, causes: { field: string; message: string }[]) =>
    failure(
      422,
      "Invalid",
      `${KINDS[kind].kind}${KINDS[kind].group ? `.${KINDS[kind].group}` : ""} "${name}" is invalid: ${causes
        .map((cause) => `${cause.field}: ${cause.message}`)
        .join(", ")}`,
      {
        name,
        ...(KINDS[kind].group !== "" ? { group: KINDS[kind].group } : {}),
        kind: KINDS[kind].kind,
        causes: causes.map((cause) => ({
          reason: "FieldValueInvalid",
          message: cause.message,
          field: cause.field,
        })),
      },
    ),
  badRequest: (message: string) => failure(400, "BadRequest", message),
  unauthorized: () => failure(401, "Unauthorized", "Unauthorized"),
  expired: (requested: string, oldest: number) =>
    failure(410, "Expired", `too old resource version: ${requested} (${oldest})`),
  success: (kind: KindName, name: string, uid: string): Status => ({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Success",
    details: {
      name,
      ...(KINDS[kind].group !== "" ? { group: KINDS[kind].group } : {}),
      kind: KINDS[kind].resource,
      uid,
    },
    code: 200,
  }),
};

/** A time as the API server writes it: RFC 3339 in UTC, whole seconds. */
export function kubeTime(date = new Date()): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** Metadata of a new object: uid, creation time and generation as the server sets them. */
export function newMetadata(metadata: KubeMetadata, namespace: string): KubeMetadata {
  return {
    ...metadata,
    namespace,
    uid: randomUUID(),
    creationTimestamp: kubeTime(),
    generation: 1,
  };
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a name is invalid for its kind, as the server's validation words it; null when valid. */
export function nameProblem(kind: KindName, name: string | undefined): string | null {
  if (name === undefined || name === "") return "Required value: name or generateName is required";
  // Job names end up as the value of the job-name label of their pods: a DNS label of 63 at most.
  if (kind === "jobs" && (name.length > 63 || !DNS_LABEL.test(name))) {
    return `Invalid value: "${name}": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character, and be no more than 63 characters`;
  }
  if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    return `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`;
  }
  return null;
}

type Requirement =
  | { key: string; op: "=" | "!="; value: string }
  | { key: string; op: "in" | "notin"; values: string[] }
  | { key: string; op: "exists" | "!exists" };

/**
 * Parses a label selector (`a=b,c!=d,e in (x,y),!f,g`); throws a message the server would give
 * for one it cannot read.
 */
export function parseLabelSelector(text: string): Requirement[] {
  const requirements: Requirement[] = [];
  const parts = text.match(/([^,(]+(\([^)]*\))?)/g) ?? [];
  for (const raw of parts) {
    const part = raw.trim();
    if (part === "") continue;
    let match = /^([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part);
    if (match !== null) {
      requirements.push({
        key: match[1]!,
        op: match[2] as "in" | "notin",
        values: match[3]!.split(",").map((value) => value.trim()),
      });
      continue;
    }
    match = /^([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)$/.exec(part);
    if (match !== null) {
      requirements.push({
        key: match[1]!,
        op: match[2] === "!=" ? "!=" : "=",
        value: match[3]!,
      });
      continue;
    }
    match = /^(!?)([^\s!=]+)$/.exec(part);
    if (match !== null) {
      requirements.push({ key: match[2]!, op: match[1] === "!" ? "!exists" : "exists" });
      continue;
    }
    throw new Error(`unable to parse requirement: ${part}`);
  }
  return requirements;
}

export function matchesSelector(
  labels: Record<string, string> | undefined,
  requirements: readonly Requirement[],
): boolean {
  const all = labels ?? {};
  return requirements.every((requirement) => {
    const value = all[requirement.key];
    switch (requirement.op) {
      case "=":
        return value === requirement.value;
      case "!=":
        return value !== requirement.value;
      case "in":
        return value !== undefined && requirement.values.includes(value);
      case "notin":
        return value === undefined || !requirement.values.includes(value);
      case "exists":
        return value !== undefined;
      case "!exists":
        return value === undefined;
      default:
        return false;
    }
  });
}
