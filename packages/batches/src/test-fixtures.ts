// Fixtures for this package's tests: repositories placed where a code host expects them, and
// specs parsed the way callers parse them. Not exported from the package.
import { mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type BatchSpec, parseBatchSpec } from "@deckhand/batch-spec";
import { createTempRepository, gitIn } from "@deckhand/testkit";

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

/** Parses a YAML spec and fails the test with its diagnostics when it is invalid. */
export function specFrom(yaml: string): BatchSpec {
  const { spec, diagnostics } = parseBatchSpec(yaml, { file: "spec.yaml" });
  if (spec === undefined) {
    throw new Error(`invalid test spec: ${diagnostics.map((d) => d.message).join("; ")}`);
  }
  return spec;
}
