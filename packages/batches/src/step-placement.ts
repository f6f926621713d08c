// Where each step of a workspace runs: on this machine (with which shell) or in its image (known
// by its id). Decided before any step runs, because it is part of each step's cache key: a result
// made on the host is not one made in an image, and an image is known by its id, not its name, so
// a re-tagged or rebuilt image is another image.

import { basename } from "node:path";
import type { Step, StepRuntimeKey } from "@deckhand/batch-spec";
import { ACP_AGENT_TYPE } from "@deckhand/batch-spec";
import {
  type ContainerImage,
  type ContainerRuntime,
  type ContainerRuntimeDetection,
  detectContainerRuntime,
  ensureImage,
  inspectImage,
  noRuntimeError,
} from "@deckhand/container-runtime";
import { errorMessage } from "@deckhand/errors";
import type { BatchStepRuntime } from "@deckhand/wire";
import { BatchesError } from "./batches-error.ts";
import { localStepShell } from "./local-step-shell.ts";

export type StepRuntimeChoice = "auto" | "local" | "container" | "kubernetes";

export interface StepPlacement {
  runtime: BatchStepRuntime;
  /** The image the step names (`container:`), whether or not it runs in it. */
  image: string | null;
  /** The image it runs in, by id; null when it runs on this machine. */
  imageId: string | null;
  /** The shell of a local step (bash or sh, as found on the runner's PATH); null in a container. */
  shell: string | null;
  /** Why a step that names an image runs on this machine instead; null when it does not. */
  fallbackReason: string | null;
  /** Why the step cannot run at all; the step fails with it when its turn comes. */
  problem: Error | null;
}

export interface StepPlacerOptions {
  /** The run's choice; default "auto". */
  choice?: StepRuntimeChoice;
  /** A runtime given by the caller (null for none, with no reasons known). */
  containerRuntime?: ContainerRuntime | null;
  /** A detection made by the caller: its runtime, or the reasons none works. */
  containerDetection?: ContainerRuntimeDetection | Promise<ContainerRuntimeDetection>;
  /** The PATH local steps get, where their shell is looked up. */
  path: string | undefined;
  /** "missing" pulls an image that is not present (a run); "never" only looks (counting). */
  pull: "missing" | "never";
  /**
   * Image look-ups shared with the run's other workspaces in this process, so a run looks each
   * image up once and uses it as it found it; default this placer's own. A look-up that failed
   * is forgotten, so the next workspace tries again.
   */
  images?: ImageLookups;
}

/** Images by the reference a step gives: found (by id), or null when missing and only looked for. */
export type ImageLookups = Map<string, Promise<ContainerImage | null>>;

/** The reasons of a detection that found no runtime, in parentheses; "" when none are known. */
function reasons(detection: ContainerRuntimeDetection): string {
  const list = detection.probes.map((probe) => probe.unavailableReason).filter(Boolean);
  return list.length === 0 ? "" : ` (${list.join("; ")})`;
}

/** Places the steps of one workspace run; runtime detection and image lookups happen once. */
export class StepPlacer {
  readonly #options: StepPlacerOptions;
  #detection: Promise<ContainerRuntimeDetection> | undefined;
  readonly #images: ImageLookups;
  readonly #shells = new Map<string, Promise<string>>();

  constructor(options: StepPlacerOptions) {
    this.#options = options;
    this.#images = options.images ?? new Map();
  }

  /** The container runtime, detected on first need unless the caller gave one. */
  detection(): Promise<ContainerRuntimeDetection> {
    if (this.#detection === undefined) {
      const given = this.#options.containerRuntime;
      this.#detection =
        given !== undefined
          ? Promise.resolve({ runtime: given, probes: [] })
          : Promise.resolve(this.#options.containerDetection ?? detectContainerRuntime());
    }
    return this.#detection;
  }

  async place(step: Step, stepIndex: number): Promise<StepPlacement> {
    const choice = this.#options.choice ?? "auto";
    const image = step.container ?? null;
    const local = async (fallbackReason: string | null): Promise<StepPlacement> => ({
      runtime: "local",
      image,
      imageId: null,
      shell: await this.#localShell(step.codingAgent === undefined ? "run" : "codingAgent"),
      fallbackReason,
      problem: null,
    });
    const unplaceable = (problem: Error): StepPlacement => ({
      runtime: "container",
      image,
      imageId: null,
      shell: null,
      fallbackReason: null,
      problem,
    });
    // The agent of an acp step runs on this machine, in the workspace, whatever the runtime.
    if (step.codingAgent?.type === ACP_AGENT_TYPE) return local(null);
    if (image === null) {
      if (choice !== "container" && choice !== "kubernetes") return local(null);
      return unplaceable(
        new BatchesError(
          "step_failed",
          `the run uses the ${choice} runtime and step ${stepIndex} names no image; set \`container:\`, or run with runtime "auto" or "local" (--runtime auto)`,
        ),
      );
    }
    // The cluster pulls the image: it is known by the reference the step gives.
    if (choice === "kubernetes") {
      const placed: StepPlacement = {
        runtime: "kubernetes",
        image,
        imageId: null,
        shell: null,
        fallbackReason: null,
        problem: null,
      };
      return placed;
    }
    if (choice === "local") {
      return local("the run uses the local runtime: the step runs on this machine");
    }
    const detection = await this.detection();
    if (detection.runtime === null) {
      if (choice === "container") {
        const cause = noRuntimeError(detection);
        return unplaceable(
          new BatchesError(
            "container_runtime_unavailable",
            `image ${image} needs a container runtime (${cause.code}): ${cause.message}`,
            { cause },
          ),
        );
      }
      return local(
        `no container runtime works on this machine${reasons(detection)}: the step runs on this machine`,
      );
    }
    try {
      const found = await this.#image(detection.runtime, image);
      if (found === null) {
        return unplaceable(
          new BatchesError(
            "step_failed",
            `image ${image} is not present on this machine, so no cached result of step ${stepIndex} can be used`,
          ),
        );
      }
      return {
        runtime: "container",
        image,
        imageId: found.id,
        shell: null,
        fallbackReason: null,
        problem: null,
      };
    } catch (error) {
      return unplaceable(
        error instanceof Error ? error : new BatchesError("step_failed", errorMessage(error)),
      );
    }
  }

  /** An image by id, pulled when missing and allowed; null when missing and only looked for. */
  #image(runtime: ContainerRuntime, image: string): Promise<ContainerImage | null> {
    const known = this.#images.get(image);
    if (known === undefined) return this.#lookUp(runtime, image);
    if (this.#options.pull === "never") return known;
    // A look-up that pulled nothing (the run's creation only looks) and found nothing is no
    // answer for a placement that pulls: the image is pulled then, once for the run.
    return known.then((found) => {
      if (found !== null) return found;
      return this.#images.get(image) === known
        ? this.#lookUp(runtime, image)
        : this.#image(runtime, image);
    });
  }

  /** Looks the image up for the run's placements; a look-up that failed is forgotten. */
  #lookUp(runtime: ContainerRuntime, image: string): Promise<ContainerImage | null> {
    const lookup =
      this.#options.pull === "missing" ? ensureImage(runtime, image) : inspectImage(runtime, image);
    this.#images.set(image, lookup);
    lookup.catch(() => {
      if (this.#images.get(image) === lookup) this.#images.delete(image);
    });
    return lookup;
  }

  #localShell(script: "run" | "codingAgent"): Promise<string> {
    let shell = this.#shells.get(script);
    if (shell === undefined) {
      shell = localStepShell(this.#options.path, script);
      this.#shells.set(script, shell);
    }
    return shell;
  }
}

/**
 * What to add to the failure of a step that names an image, ran on this machine instead, and
 * exited 127, a shell's "command not found": the tool it needs is likely only in its image.
 * Null for any other step or exit.
 */
export function missingCommandHint(
  placement: StepPlacement,
  exitCode: number | null,
): string | null {
  if (exitCode !== 127 || placement.runtime !== "local" || placement.image === null) return null;
  const remedy = placement.fallbackReason?.startsWith("the run uses the local runtime")
    ? `run with runtime "container" (--runtime container) so it runs in that image`
    : `make a container runtime work (Podman or Docker; see why none does above) so it runs in that image`;
  return `a command the step runs was not found on this machine; the step names image ${placement.image}, which was not used (${placement.fallbackReason}): ${remedy}, or install the command here`;
}

/**
 * What a step's cache key records of its placement: the shell's name (not its path, which
 * differs between machines with the same shell), or the image's id. Null for a step that
 * cannot run, whose result could never have been stored.
 */
export function placementKey(placement: StepPlacement): StepRuntimeKey | null {
  if (placement.problem !== null) return null;
  if (placement.runtime === "local") {
    return { runtime: "local", shell: basename(placement.shell ?? "sh") };
  }
  if (placement.runtime === "kubernetes") return { runtime: "kubernetes", image: placement.image! };
  return { runtime: "container", imageId: placement.imageId! };
}
