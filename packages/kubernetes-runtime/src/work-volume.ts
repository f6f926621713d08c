// How a step's files reach its pod: the executor keeps its data directory (clone cache and
// checkouts) on a volume that step pods mount too, so the checkout is shared, not copied — the
// step changes it in place and the executor reads the diff with git afterwards, as for a local
// or container step. Paths on the volume become sub-path mounts; anything else a step mounts
// (rendered `files:`, `mount:` paths of the spec) is copied into the step's control directory on
// the volume first, and removed with it.
import { cp, mkdir, rm, writeFile } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import type { V1VolumeMount } from "@kubernetes/client-node";
import { KubernetesRuntimeError } from "./kubernetes-runtime-error.ts";
import { CONTROL_DIRECTORY, STDERR_FILE, WORK_VOLUME } from "./step-job.ts";

/** Where control directories live on the volume, under the executor's mount of it. */
export const CONTROL_ROOT = ".deckhand-kubernetes";

export interface KubernetesStepMount {
  /** A path on the executor's machine. */
  readonly source: string;
  /** Where the step sees it (absolute). */
  readonly target: string;
  readonly readOnly?: boolean;
  /**
   * Left out when not on the work volume, instead of being copied there (the repository's git
   * directory of a local code host, too large to copy for each step and only a convenience).
   */
  readonly optional?: boolean;
}

/** The path of `path` on the volume mounted at `mountPath`, or null when it is not on it. */
export function volumeSubPath(mountPath: string, path: string): string | null {
  const inside = relative(mountPath, path);
  if (inside === "" || inside.startsWith("..") || isAbsolute(inside)) return null;
  return inside.split(sep).join("/");
}

export interface PreparedVolume {
  volumeMounts: V1VolumeMount[];
  /** The control directory on this machine, where the pod writes the step's stderr. */
  controlDirectory: string;
  stderrPath: string;
  /** Removes the control directory and what was copied into it. */
  remove(): Promise<void>;
}

/**
 * The sub-path mounts of a step and its control directory, with the off-volume mounts copied
 * in. The checkout mount must be on the volume: a step that changed a copy would change nothing.
 */
export async function prepareVolume(
  mountPath: string,
  jobName: string,
  checkout: KubernetesStepMount,
  mounts: readonly KubernetesStepMount[],
): Promise<PreparedVolume> {
  const checkoutSubPath = volumeSubPath(mountPath, checkout.source);
  if (checkoutSubPath === null) {
    throw new KubernetesRuntimeError(
      "invalid_step",
      `the checkout ${checkout.source} is not on the work volume mounted at ${mountPath}, so a step pod cannot see it; put the executor's data directory on that volume (--data-dir under ${mountPath}) or set kubernetes.workVolume.mountPath to where the volume is mounted`,
    );
  }
  const controlSubPath = `${CONTROL_ROOT}/${jobName}`;
  const controlDirectory = join(mountPath, CONTROL_ROOT, jobName);
  const remove = () => rm(controlDirectory, { recursive: true, force: true });
  try {
    await mkdir(join(controlDirectory, "files"), { recursive: true });
    const stderrPath = join(controlDirectory, STDERR_FILE);
    await writeFile(stderrPath, "");
    const volumeMounts: V1VolumeMount[] = [
      { name: WORK_VOLUME, mountPath: checkout.target, subPath: checkoutSubPath },
      { name: WORK_VOLUME, mountPath: CONTROL_DIRECTORY, subPath: controlSubPath },
    ];
    for (const [index, mount] of mounts.entries()) {
      let subPath = volumeSubPath(mountPath, mount.source);
      if (subPath === null) {
        if (mount.optional === true) continue;
        // Copied with its modes, so a mounted script stays executable.
        await cp(mount.source, join(controlDirectory, "files", String(index)), {
          recursive: true,
          dereference: true,
        });
        subPath = `${controlSubPath}/files/${index}`;
      }
      volumeMounts.push({
        name: WORK_VOLUME,
        mountPath: mount.target,
        subPath,
        ...(mount.readOnly === true ? { readOnly: true } : {}),
      });
    }
    return { volumeMounts, controlDirectory, stderrPath, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}
