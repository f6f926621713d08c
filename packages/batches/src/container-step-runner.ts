// Runs steps in their image with Docker or Podman, as src-cli does: the checkout at /work, the
// workspace's directory as working directory, the step's files and mounts read-only at their
// targets, and no network (an agent step shares the host's, to reach the model-provider proxy
// on this machine's loopback).
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { posix } from "node:path";
import type { AgentPlatform, BatchSpec } from "@deckhand/batch-spec";
import {
  type ContainerMount,
  type ContainerRuntime,
  mountBreakingCharacter,
  runContainer,
} from "@deckhand/container-runtime";
import { gitDirectories } from "@deckhand/git";
import { containerPlatform } from "./coding-agent-step.ts";
import type { ExecutionEnvironment } from "./execution-environment.ts";
import { repositoryGit } from "./repository-git.ts";
import type { ImageLookups, StepPlacement, StepRuntimeChoice } from "./step-placement.ts";
import { stepPlacer } from "./step-plan.ts";
import {
  type PreparedStep,
  probedOnce,
  type StepCheckout,
  type StepExit,
  type StepFile,
  type StepRunner,
} from "./step-runner.ts";

/** Where the checkout appears in a container, as in src-cli. */
export const CONTAINER_WORK_DIRECTORY = "/work";

/** The step's files and mounts as read-only container mounts. */
function stepMounts(step: Pick<PreparedStep, "files" | "mounts">): ContainerMount[] {
  return [...step.files, ...step.mounts].map((mount: StepFile) => ({ ...mount, readOnly: true }));
}

export class ContainerStepRunner implements StepRunner {
  readonly #runtime: ContainerRuntime;
  readonly #shells: Map<string, Promise<string>>;
  /** Per image, the platform its containers report, probed once per workspace run. */
  readonly #platforms = new Map<string, Promise<AgentPlatform>>();

  /**
   * `shells`: which shell each image's scripts get, shared across the runs of one process so an
   * image is probed once.
   */
  constructor(runtime: ContainerRuntime, shells: Map<string, Promise<string>>) {
    this.#runtime = runtime;
    this.#shells = shells;
  }

  platform(
    placement: StepPlacement,
    _checkout: StepCheckout,
    signal: AbortSignal,
  ): Promise<AgentPlatform> {
    const image = placement.imageId!;
    let probed = this.#platforms.get(image);
    if (probed === undefined) {
      probed = containerPlatform(this.#runtime, image, signal);
      this.#platforms.set(image, probed);
    }
    return probed;
  }

  async shell(step: Omit<PreparedStep, "shell">): Promise<string> {
    // The rendered agent script is POSIX sh; a `run` script gets bash where there is one.
    if (step.kind === "codingAgent") return "/bin/sh";
    return containerShell(
      this.#runtime,
      step.placement.imageId!,
      stepMounts(step),
      await mountKeys(step),
      step.signal,
      this.#shells,
    );
  }

  async run(step: PreparedStep): Promise<StepExit> {
    const mounts: ContainerMount[] = [
      { source: step.checkout.directory, target: CONTAINER_WORK_DIRECTORY },
      ...(await repositoryMount(step.checkout.directory, step.signal)),
      ...stepMounts(step),
    ];
    const imageId = step.placement.imageId!;
    const result = await runContainer(this.#runtime, {
      // Run by id: the image the cache key names, even if its tag moved since. Placing the step
      // found it present (pulling it if need be), so the run does not look it up again.
      image: imageId,
      knownImage: { reference: imageId, id: imageId, digest: null },
      script: step.script,
      shell: step.shell,
      // An agent reaches the model-provider proxy on this machine's loopback; other steps keep
      // the default, no network.
      ...(step.kind === "codingAgent" ? { network: "host" as const } : {}),
      workdir: posix.join(CONTAINER_WORK_DIRECTORY, step.workspacePath),
      mounts,
      env: step.env,
      signal: step.signal,
      onOutput: (chunk) => step.output(chunk.stream, chunk.data),
    });
    return { exitCode: result.exitCode };
  }
}

/**
 * What of a step's own mounts its shell probe depends on: a `mount:` by its source and target; a
 * `files:` entry by its target and content, since each step renders it into a temporary file of
 * its own (the same content at the same target, with the same mode, is the same file in the
 * container), so a step with files is not probed again for every workspace.
 */
async function mountKeys(step: Pick<PreparedStep, "files" | "mounts">): Promise<string[]> {
  const files = await Promise.all(
    step.files.map(async (file) => {
      const digest = createHash("sha256")
        .update(await readFile(file.source))
        .digest("hex");
      return `file:${file.target}:${digest}`;
    }),
  );
  return [...files, ...step.mounts.map((mount) => `${mount.source}:${mount.target}`)];
}

/**
 * The shell a container step's script runs in: `/bin/bash` when the image has one, otherwise
 * `/bin/sh`, as src-cli chooses, so scripts written for bash keep working in images that have it.
 * Probed with the step's mounts, since a mount can be what provides the shell.
 */
async function containerShell(
  runtime: ContainerRuntime,
  image: string,
  mounts: readonly ContainerMount[],
  keys: readonly string[],
  signal: AbortSignal,
  shells: Map<string, Promise<string>>,
): Promise<string> {
  // Only the step's own mounts (files, mount:) could provide a shell, so they are part of the
  // key (`keys`, see mountKeys); the checkout and the repository are mounted at /work and at the
  // repository's path. `image` is the id placing the step found, so it names the image without a
  // look-up.
  const key = `${image}\0${keys.join("\0")}`;
  return probedOnce(shells, key, signal, () => {
    const probe = probeShell(runtime, image, mounts, signal);
    const shell = probe.then((found) => found.shell);
    // A probe whose container did not run to its end (the engine failed, it timed out) did not
    // find the image without bash: this step takes sh, and the next step probes again.
    void probe.then((found) => {
      if (!found.certain && shells.get(key) === shell) shells.delete(key);
    });
    return shell;
  });
}

async function probeShell(
  runtime: ContainerRuntime,
  image: string,
  mounts: readonly ContainerMount[],
  signal: AbortSignal,
): Promise<{ shell: string; certain: boolean }> {
  try {
    const probe = await runContainer(runtime, {
      image,
      knownImage: { reference: image, id: image, digest: null },
      script: "exit 0",
      shell: "/bin/bash",
      mounts: mounts.map((mount) => ({ ...mount, readOnly: true })),
      signal,
      timeoutMs: 120_000,
    });
    return {
      shell: probe.exitCode === 0 ? "/bin/bash" : "/bin/sh",
      certain: probe.ending === "exited",
    };
  } catch {
    // The image cannot start at all; the step's own run reports why.
    return { shell: "/bin/sh", certain: false };
  }
}

/** What a container step's shell probe is given when nothing cancels it (a run's creation). */
const NOT_CANCELLED = new AbortController().signal;

/**
 * Starts the shell probe of each image the spec's `run` steps name without `files:` or `mount:`,
 * whose probe the image alone keys, as the run is created: its first jobs then find the answer
 * instead of each waiting for a container's start before their first step. It is the probe those
 * steps make, once per image and process, and the same one: the same image (the id the run's
 * placement found, through `images`), no mounts of the step's own. Nothing when no step would
 * run in a container.
 */
export async function probeContainerShellsEarly(options: {
  spec: BatchSpec;
  runtime: StepRuntimeChoice;
  environment: ExecutionEnvironment;
  images: ImageLookups;
}): Promise<void> {
  const { spec, environment } = options;
  const steps = (spec.steps ?? [])
    .map((step, index) => ({ step, index }))
    .filter(
      ({ step }) =>
        step.container !== undefined &&
        step.codingAgent === undefined &&
        Object.keys(step.files ?? {}).length === 0 &&
        (step.mount ?? []).length === 0,
    );
  if (steps.length === 0) return;
  const placer = stepPlacer(
    { spec, runtime: options.runtime, environment },
    environment.launcher.inheritedEnvironment(),
    "never",
    options.images,
  );
  const imageIds = new Set<string>();
  for (const { step, index } of steps) {
    const placement = await placer.place(step, index);
    if (placement.runtime === "container" && placement.imageId !== null) {
      imageIds.add(placement.imageId);
    }
  }
  const runtime = imageIds.size === 0 ? null : (await placer.detection()).runtime;
  if (runtime === null) return;
  await Promise.all(
    [...imageIds].map((image) =>
      containerShell(runtime, image, [], [], NOT_CANCELLED, environment.containerShells),
    ),
  );
}

/**
 * The checkout is a git worktree: its `.git` is a file naming the repository's git directory by
 * its path on this machine. Mounting that directory read-only at the same path lets `git` in the
 * container read the repository (`git ls-files`, `git grep`, `git log`) as steps expect, without
 * letting a step change the user's repository. A path a mount cannot carry is left out.
 */
export async function repositoryMount(
  checkoutDirectory: string,
  signal: AbortSignal,
): Promise<ContainerMount[]> {
  const directory =
    worktreeCommonDirectory(checkoutDirectory) ??
    (
      await repositoryGit(
        checkoutDirectory,
        ["rev-parse", "--path-format=absolute", "--git-common-dir"],
        `finding the git directory of ${checkoutDirectory}`,
        { signal },
      )
    ).stdout.trim();
  if (mountBreakingCharacter(directory) !== undefined) return [];
  return [{ source: directory, target: directory, readOnly: true }];
}

/**
 * The repository's git directory as git inside the container finds it from the worktree: the
 * `.git` file names the worktree's administrative directory, whose `commondir` file names the
 * repository's, relative to it (gitrepository-layout). Read from those two files rather than
 * asked of a git process, which a container step would otherwise start each time; null when
 * the checkout is not laid out so (git is asked then).
 */
function worktreeCommonDirectory(checkoutDirectory: string): string | null {
  const directories = gitDirectories(checkoutDirectory);
  return directories?.linked === true && directories.commonDirectory !== directories.gitDirectory
    ? directories.commonDirectory
    : null;
}
