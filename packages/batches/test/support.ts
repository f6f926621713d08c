// Fixtures for this package's tests: repositories placed where a code host expects them, and
// specs parsed the way callers parse them. Not exported from the package.
import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type BatchSpec, parseBatchSpec } from "@deckhand/batch-spec";
import { createTempRepository, gitIn } from "@deckhand/testkit";
import type { WorkspaceOutcome } from "../src/build-changesets.ts";
import { checkoutWorkspace } from "../src/checkout-workspace.ts";
import {
  type BatchDirectories,
  ExecutionEnvironment,
  type ExecutionEnvironmentOptions,
} from "../src/execution-environment.ts";
import { loadRepositories } from "../src/repositories.ts";
import { resolveWorkspaces } from "../src/resolve-workspaces.ts";
import { runWorkspace } from "../src/run-workspace.ts";
import { MemoryStepCache, type StepCache } from "../src/step-cache.ts";

export interface PlacedRepository {
  path: string;
  git(...args: string[]): string;
}

/** A repository with one commit of `files` on `main`, made by testkit and moved to `path`. */
export function repositoryAt(
  path: string,
  files: Record<string, string> = { "README.md": "# demo\n" },
): PlacedRepository {
  const made = createTempRepository(files);
  mkdirSync(dirname(path), { recursive: true });
  renameSync(made.path, path);
  return { path, git: (...args) => gitIn(path, ...args) };
}

/** A temporary directory removed by the returned cleanup. */
export function temporaryDirectory(prefix = "deckhand-batches-"): {
  path: string;
  remove(): void;
} {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * An execution environment for tests: clones in `<scratch>/cache`, checkouts in `<scratch>/work`
 * and hook checkouts in `<scratch>/hooks`; unconfined unless `options` gives a launcher.
 */
export function testEnvironment(
  scratch: string,
  options: Omit<ExecutionEnvironmentOptions, "directories"> & {
    directories?: Partial<BatchDirectories>;
  } = {},
): ExecutionEnvironment {
  const { directories, ...rest } = options;
  return new ExecutionEnvironment({
    directories: {
      cacheDirectory: join(scratch, "cache"),
      workDirectory: join(scratch, "work"),
      hookDirectory: join(scratch, "hooks"),
      ...directories,
    },
    ...rest,
  });
}

/** Parses a YAML spec and fails the test with its diagnostics when it is invalid. */
export function specFrom(yaml: string): BatchSpec {
  const { spec, diagnostics } = parseBatchSpec(yaml, { file: "spec.yaml" });
  if (spec === undefined) {
    throw new Error(`invalid test spec: ${diagnostics.map((d) => d.message).join("; ")}`);
  }
  return spec;
}

/** Every workspace of a spec, each run locally in a fresh checkout under `scratch`. */
export async function runSpecLocally(
  yaml: string,
  options: { root: string; scratch: string; cache?: StepCache },
): Promise<{ spec: BatchSpec; outcomes: WorkspaceOutcome[] }> {
  const spec = specFrom(yaml);
  const repositories = await loadRepositories({
    codeHosts: [{ type: "directory", path: options.root }],
  });
  const { workspaces } = await resolveWorkspaces(spec, { repositories });
  const cache = options.cache ?? new MemoryStepCache();
  const outcomes: WorkspaceOutcome[] = [];
  for (const [index, workspace] of workspaces.entries()) {
    const checkout = await checkoutWorkspace(
      workspace,
      join(options.scratch, `run-${Date.now()}-${index}`),
    );
    const run = await runWorkspace({
      workspace,
      spec,
      checkout,
      cache,
      runtime: "local",
      environment: testEnvironment(options.scratch, {
        outerEnvironment: { PATH: process.env.PATH },
      }),
    });
    if (run.status !== "completed") throw new Error(`workspace failed: ${run.error}`);
    outcomes.push({ workspace, result: run.result });
  }
  return { spec, outcomes };
}
