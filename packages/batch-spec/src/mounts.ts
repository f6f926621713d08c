// Mounted files come from the machine that runs the spec, so a spec must not reach outside
// the directory it lives in: not with `..`, not with an absolute path, not through a symlink.
import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import type { BatchSpecDiagnostic, FieldPath } from "./diagnostics.ts";
import { SpecSource } from "./spec-source.ts";

type Data = Record<string, unknown>;

function isRecord(value: unknown): value is Data {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function inside(directory: string, candidate: string): boolean {
  const path = relative(directory, candidate);
  return path === "" || (!path.startsWith("..") && !isAbsolute(path));
}

function realpath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

export interface ValidateMountsOptions {
  source?: SpecSource;
  file?: string;
}

/**
 * Checks that every `mount[].path` of every step (and hook step) exists and resolves, symlinks
 * followed, to a place inside `specDirectory`, the directory that holds the spec file.
 */
export function validateMounts(
  spec: unknown,
  specDirectory: string,
  options: ValidateMountsOptions = {},
): BatchSpecDiagnostic[] {
  const source = options.source ?? new SpecSource(options.file ?? "");
  const diagnostics: BatchSpecDiagnostic[] = [];
  if (!isRecord(spec)) return diagnostics;
  const directory = resolve(specDirectory);
  const realDirectory = realpath(directory) ?? directory;

  const checkSteps = (steps: unknown, path: FieldPath) => {
    if (!Array.isArray(steps)) return;
    steps.forEach((step, stepIndex) => {
      if (!isRecord(step) || !Array.isArray(step.mount)) return;
      step.mount.forEach((mount, mountIndex) => {
        if (!isRecord(mount) || typeof mount.path !== "string") return;
        const mountPath = mount.path;
        const fieldPath = [...path, stepIndex, "mount", mountIndex, "path"];
        const lexical = resolve(directory, mountPath);
        const add = (code: BatchSpecDiagnostic["code"], message: string) =>
          diagnostics.push(source.diagnostic(fieldPath, code, message, "value"));
        if (!inside(directory, lexical)) {
          add(
            "mount_outside_spec_directory",
            `mount path "${mountPath}" is outside the spec's directory (${directory}); mount only files inside the directory that holds the batch spec`,
          );
          return;
        }
        const real = realpath(lexical);
        if (real === undefined) {
          add(
            "mount_not_found",
            `mount path "${mountPath}" does not exist in the spec's directory (${directory}); create it or correct the path`,
          );
          return;
        }
        if (!inside(realDirectory, real)) {
          add(
            "mount_outside_spec_directory",
            `mount path "${mountPath}" leads through a symlink to ${real}, outside the spec's directory (${directory}); mount only files inside the directory that holds the batch spec`,
          );
        }
      });
    });
  };

  checkSteps(spec.steps, ["steps"]);
  if (isRecord(spec.changesetHooks)) {
    for (const event of ["onCIFailure", "onMergeConflict"]) {
      const hook = spec.changesetHooks[event];
      if (isRecord(hook)) checkSteps(hook.steps, ["changesetHooks", event, "steps"]);
    }
  }
  return diagnostics;
}
