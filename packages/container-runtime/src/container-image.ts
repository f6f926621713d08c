import { firstLine, runCli } from "./container-cli.ts";
import { ContainerRuntimeError } from "./container-runtime-error.ts";
import type { ContainerRuntime } from "./detect-container-runtime.ts";

export interface ContainerImage {
  /** The reference as given. */
  readonly reference: string;
  /** The local image id (config digest), always present. */
  readonly id: string;
  /** The manifest digest (`sha256:…`) when the engine knows one, else null. */
  readonly digest: string | null;
}

interface InspectRecord {
  Id?: string;
  Digest?: string;
  RepoDigests?: string[];
}

/** The local image, or null when the engine has no image of that reference. */
export async function inspectImage(
  runtime: ContainerRuntime,
  reference: string,
  options: { timeoutMs?: number } = {},
): Promise<ContainerImage | null> {
  // `--` ends the options: a reference such as `--privileged` is an image name, never a flag.
  const result = await runCli(runtime, ["image", "inspect", "--", reference], {
    timeoutMs: options.timeoutMs ?? 15_000,
  });
  if (result.spawnError !== null || result.timedOut) {
    throw new ContainerRuntimeError(
      "runtime_failed",
      `\`${runtime.kind} image inspect ${reference}\` ${result.timedOut ? "did not answer in time" : `could not start: ${result.spawnError?.message}`}`,
    );
  }
  // Both CLIs answer a missing image with exit 1 and an empty (or `[]`) standard output.
  if (result.exitCode !== 0) return null;
  let records: InspectRecord[];
  try {
    records = JSON.parse(result.stdout) as InspectRecord[];
  } catch (error) {
    throw new ContainerRuntimeError(
      "runtime_failed",
      `\`${runtime.kind} image inspect ${reference}\` printed something other than JSON`,
      { cause: error },
    );
  }
  const record = records[0];
  if (record?.Id === undefined) return null;
  const repoDigest = record.RepoDigests?.[0]?.split("@")[1] ?? null;
  return { reference, id: record.Id, digest: record.Digest ?? repoDigest };
}

export interface EnsureImageOptions {
  /** "missing" pulls when the image is not present locally; "never" only looks. Default "missing". */
  pull?: "missing" | "never";
  /** For the pull; default 10 minutes. */
  pullTimeoutMs?: number;
}

/**
 * The image a step will run, present locally: pulled when missing and allowed, otherwise an
 * `image_unavailable` error that says how to make it available.
 */
export async function ensureImage(
  runtime: ContainerRuntime,
  reference: string,
  options: EnsureImageOptions = {},
): Promise<ContainerImage> {
  const present = await inspectImage(runtime, reference);
  if (present !== null) return present;
  const hint = `build or load it first (\`${runtime.kind} load\`, \`${runtime.kind} import\`)`;
  if ((options.pull ?? "missing") === "never") {
    throw new ContainerRuntimeError(
      "image_unavailable",
      `image ${reference} is not present locally and pulling is off; ${hint}`,
    );
  }
  const pulled = await runCli(runtime, ["pull", "--", reference], {
    timeoutMs: options.pullTimeoutMs ?? 600_000,
  });
  if (pulled.exitCode !== 0) {
    const why = pulled.timedOut
      ? "the pull did not finish in time"
      : firstLine(pulled.stderr || pulled.stdout);
    throw new ContainerRuntimeError(
      "image_unavailable",
      `image ${reference} is not present locally and could not be pulled (${why}); ${hint}`,
    );
  }
  const image = await inspectImage(runtime, reference);
  if (image === null) {
    throw new ContainerRuntimeError(
      "image_unavailable",
      `image ${reference} was pulled but \`${runtime.kind} image inspect\` does not find it`,
    );
  }
  return image;
}
