import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { HeadTailBuffer, type HeadTailOptions, type HeadTailSnapshot } from "@deckhand/headtail";
import { sharedSpawnHost } from "@deckhand/spawn-host";
import { firstLine, runCli } from "./container-cli.ts";
import { type ContainerImage, ensureImage } from "./container-image.ts";
import {
  type ContainerMount,
  checkContainerPath,
  checkTimeout,
  checkUser,
  environmentArguments,
  mountArguments,
} from "./container-options.ts";
import { ContainerRuntimeError } from "./container-runtime-error.ts";
import type { ContainerRuntime } from "./detect-container-runtime.ts";

export interface HostUser {
  readonly uid: number;
  readonly gid: number;
}

export interface ContainerOutputChunk {
  readonly stream: "stdout" | "stderr";
  readonly data: Buffer;
}

export interface RunContainerOptions {
  image: string;
  /** Runs through the image's entrypoint with these arguments. Exclusive with `script`. */
  command?: readonly string[];
  /** Runs as `<shell> -c <script>`, replacing the image's entrypoint. Exclusive with `command`. */
  script?: string;
  /** The shell for `script`; default `/bin/sh`. */
  shell?: string;
  workdir?: string;
  mounts?: readonly ContainerMount[];
  env?: Readonly<Record<string, string>>;
  /**
   * The container user (NAME, UID or UID:GID). Default: the host user's uid:gid, so what the
   * step writes to a mount belongs to the host user. Any other user's files on writable mounts
   * are given back to the host user after the step (see `owner`).
   */
  user?: string;
  /** The host user workspace files must belong to; default the invoking process's uid and gid. */
  owner?: HostUser;
  /** Default "none". "host" shares the host's network, loopback included. */
  network?: "none" | "host";
  timeoutMs?: number;
  signal?: AbortSignal;
  onOutput?: (chunk: ContainerOutputChunk) => void;
  /** Bounds of the kept output (stdout and stderr interleaved). */
  output?: HeadTailOptions;
  /** Container name; default a random `deckhand-step-…`. Lets a caller find or kill it. */
  name?: string;
  /** Whether a missing image may be pulled; default "missing". */
  pull?: "missing" | "never";
  /**
   * The image as the caller already found it present (with `image` its id): the run does not
   * look it up again. A batch run finds each image once, so each step costs one engine process.
   */
  knownImage?: ContainerImage;
}

export interface ContainerRunResult {
  readonly name: string;
  readonly image: ContainerImage;
  /** "exited": the command ended by itself; otherwise this package killed the container. */
  readonly ending: "exited" | "timed_out" | "aborted";
  /** The command's exit code; null when the container was killed. */
  readonly exitCode: number | null;
  /** Head and tail of stdout and stderr, interleaved as they arrived. */
  readonly output: HeadTailSnapshot;
  readonly durationMs: number;
  /** True when files on writable mounts were given back to the owner after the step. */
  readonly ownershipRestored: boolean;
}

/** Docker's documented exit code for "the CLI or daemon failed", which Podman shares. */
const RUNTIME_FAILURE_EXIT = 125;

function hostUser(): HostUser {
  return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
}

/**
 * How the step's user is chosen so its files stay the host user's. Rootful engines share uids
 * with the host, so the container runs as the host uid:gid. Rootless engines map container root
 * to the invoking user: Podman keeps the same uid inside with `--userns keep-id`, Docker runs as
 * container root.
 */
function userArguments(runtime: ContainerRuntime, owner: HostUser, user: string | undefined) {
  if (user !== undefined) {
    const ownUser = `${owner.uid}:${owner.gid}`;
    const needsRestore = runtime.rootless ? user !== "0:0" && user !== "0" : user !== ownUser;
    return { args: ["--user", checkUser(user)], needsRestore };
  }
  if (!runtime.rootless)
    return { args: ["--user", `${owner.uid}:${owner.gid}`], needsRestore: false };
  if (runtime.kind === "podman") {
    return {
      args: ["--userns", "keep-id", "--user", `${owner.uid}:${owner.gid}`],
      needsRestore: false,
    };
  }
  return { args: ["--user", "0:0"], needsRestore: false };
}

async function killContainer(runtime: ContainerRuntime, name: string, exited: () => boolean) {
  // The container may not exist yet when a timeout fires right after the start; keep trying
  // until it is killed or the run ends by itself.
  for (let attempt = 0; attempt < 50 && !exited(); attempt += 1) {
    const killed = await runCli(runtime, ["kill", "--signal", "KILL", "--", name], {
      timeoutMs: 15_000,
    });
    if (killed.exitCode === 0) return;
    await delay(100);
  }
}

/**
 * Gives files on the writable mounts back to the owner after a step ran as another user, from a
 * root container of the same image (the host process may not be root, the engine's root is).
 * `-h` changes symlinks themselves, never what they point to.
 */
async function restoreOwnership(
  runtime: ContainerRuntime,
  image: string,
  mounts: readonly ContainerMount[],
  owner: HostUser,
) {
  const writable = mounts.filter((mount) => mount.readOnly !== true);
  if (writable.length === 0) return false;
  const target = runtime.rootless ? "0:0" : `${owner.uid}:${owner.gid}`;
  const result = await runCli(
    runtime,
    [
      "run",
      "--rm",
      "--pull",
      "never",
      ...runtime.runArgs,
      "--network",
      "none",
      "--user",
      "0:0",
      ...mountArguments(writable),
      "--entrypoint",
      "chown",
      "--",
      image,
      "-Rh",
      target,
      ...writable.map((mount) => mount.target),
    ],
    { timeoutMs: 300_000 },
  );
  if (result.exitCode !== 0) {
    throw new ContainerRuntimeError(
      "ownership_restore_failed",
      `the step ran as another user and its files could not be given back to ${owner.uid}:${owner.gid} with \`chown\` in image ${image}: ${firstLine(result.stderr || result.stdout)}; run the step as the default user or use an image with chown`,
    );
  }
  return true;
}

/**
 * Runs one step in a container and waits for it: `--rm` and a name, so a timeout or an abort
 * kills it by name and nothing is left behind. Output streams to `onOutput` and is kept in a
 * bounded head+tail buffer.
 */
export async function runContainer(
  runtime: ContainerRuntime,
  options: RunContainerOptions,
): Promise<ContainerRunResult> {
  if ((options.command === undefined) === (options.script === undefined)) {
    throw new ContainerRuntimeError(
      "invalid_options",
      "a container step needs exactly one of `command` (arguments for the image's entrypoint) or `script` (run by a shell)",
    );
  }
  const timeoutMs = checkTimeout(options.timeoutMs);
  const owner = options.owner ?? hostUser();
  const mounts = options.mounts ?? [];
  const name = options.name ?? `deckhand-step-${randomBytes(6).toString("hex")}`;
  const user = userArguments(runtime, owner, options.user);
  const environment = environmentArguments(options.env ?? {});
  const args = [
    "run",
    "--rm",
    "--name",
    name,
    "--pull",
    "never",
    ...runtime.runArgs,
    "--network",
    options.network ?? "none",
    ...user.args,
    ...mountArguments(mounts),
    ...environment.args,
  ];
  if (options.workdir !== undefined)
    args.push("-w", checkContainerPath("workdir", options.workdir));
  // `--` ends the options, so the image is read as an image whatever it starts with (a spec's
  // `--privileged` would otherwise be a flag); Docker's and Podman's CLIs both accept it.
  if (options.script !== undefined) {
    const shell = checkContainerPath("shell", options.shell ?? "/bin/sh");
    args.push("--entrypoint", shell, "--", options.image, "-c", options.script);
  } else {
    args.push("--", options.image, ...(options.command ?? []));
  }

  const image =
    options.knownImage ??
    (await ensureImage(runtime, options.image, { pull: options.pull ?? "missing" }));
  const output = new HeadTailBuffer(options.output);
  const started = performance.now();
  if (options.signal?.aborted) {
    output.close();
    return {
      name,
      image,
      ending: "aborted",
      exitCode: null,
      output: output.snapshot(),
      durationMs: 0,
      ownershipRestored: false,
    };
  }

  // Started by the spawn host (a fork of this process, which may hold the embedded database,
  // blocks its event loop for milliseconds); its pid is never needed: it is stopped by name.
  const child = sharedSpawnHost().spawn(runtime.binary, [...runtime.globalArgs, ...args], {
    cwd: process.cwd(),
    env: environment.clientEnv,
    detached: false,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let exited = false;
  let ending: ContainerRunResult["ending"] = "exited";
  const stop = (reason: "timed_out" | "aborted") => {
    if (exited || ending !== "exited") return;
    ending = reason;
    void killContainer(runtime, name, () => exited);
  };
  const timer = timeoutMs === undefined ? null : setTimeout(() => stop("timed_out"), timeoutMs);
  const onAbort = () => stop("aborted");
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const forward = (stream: "stdout" | "stderr") => (data: Buffer) => {
    output.write(data);
    options.onOutput?.({ stream, data });
  };
  child.stdout!.on("data", forward("stdout"));
  child.stderr!.on("data", forward("stderr"));

  const outcome = await new Promise<{ code: number | null; error: Error | null }>((resolve) => {
    let error: Error | null = null;
    child.on("error", (spawnError) => {
      error = spawnError;
    });
    child.on("close", (code) => resolve({ code: error === null ? code : null, error }));
  });
  exited = true;
  if (timer !== null) clearTimeout(timer);
  options.signal?.removeEventListener("abort", onAbort);
  output.close();
  const durationMs = Math.round(performance.now() - started);

  if (outcome.error !== null) {
    throw new ContainerRuntimeError(
      "runtime_failed",
      `\`${runtime.binary} run\` could not start: ${outcome.error.message}`,
      { cause: outcome.error },
    );
  }
  if (ending === "exited" && outcome.code === RUNTIME_FAILURE_EXIT) {
    const snapshot = output.snapshot();
    throw new ContainerRuntimeError(
      "runtime_failed",
      `\`${runtime.kind} run\` failed before the step ran: ${firstLine(snapshot.text.split("\n").reverse().join("\n"))}`,
    );
  }
  const ownershipRestored = user.needsRestore
    ? await restoreOwnership(runtime, options.image, mounts, owner)
    : false;
  return {
    name,
    image,
    ending,
    exitCode: ending === "exited" ? outcome.code : null,
    output: output.snapshot(),
    durationMs,
    ownershipRestored,
  };
}
