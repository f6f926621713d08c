import { writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Writes the benches' one-repository spec: one `sed` step replacing "old" with `replacement` in
 * `files` of github.com/acme/one, and its changeset. A new `replacement` makes a spec (and a step
 * cache key) no run has seen yet. Returns the spec's path.
 */
export function writeSedSpec(
  directory: string,
  replacement: string,
  files: readonly string[] = ["README.md"],
): string {
  const path = join(directory, `sed-${replacement}.yaml`);
  writeFileSync(
    path,
    `name: sed-one
on:
  - repository: github.com/acme/one
steps:
  - run: sed -i 's/old/${replacement}/g' ${files.join(" ")}
    container: alpine:3
changesetTemplate:
  title: Replace old
  branch: batch/sed-one
  commit:
    message: Replace old
`,
  );
  return path;
}
