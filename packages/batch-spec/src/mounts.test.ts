import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatDiagnostic } from "./diagnostics.ts";
import { parseBatchSpec } from "./parse-batch-spec.ts";

let root: string;
let specDirectory: string;

beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "batch-spec-mounts-")));
  specDirectory = join(root, "spec");
  mkdirSync(join(specDirectory, "scripts"), { recursive: true });
  writeFileSync(join(specDirectory, "scripts", "fix.sh"), "echo fix\n");
  writeFileSync(join(root, "secret.txt"), "secret\n");
  symlinkSync(join(root, "secret.txt"), join(specDirectory, "escape"));
  symlinkSync(join(specDirectory, "scripts"), join(specDirectory, "inner-link"));
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

function problems(mounts: string[]): string[] {
  const text = `name: x
steps:
  - run: sh /x
    container: alpine
    mount:
${mounts.map((path) => `      - path: ${path}\n        mountpoint: /x`).join("\n")}
changesetTemplate:
  title: t
  branch: b
  commit:
    message: m
`;
  return parseBatchSpec(text, { file: "spec.yaml", specDirectory }).diagnostics.map(
    formatDiagnostic,
  );
}

describe("mount paths stay inside the spec's directory", () => {
  it("accepts files and directories inside it, also through a symlink that stays inside", () => {
    expect(
      problems([
        "scripts/fix.sh",
        "./scripts",
        `${specDirectory}/scripts/fix.sh`,
        "inner-link/fix.sh",
      ]),
    ).toEqual([]);
  });

  it("rejects a path that leaves the directory with ..", () => {
    expect(problems(["../secret.txt"])).toEqual([
      `spec.yaml:6:15: steps[0].mount[0].path: mount path "../secret.txt" is outside the spec's directory (${specDirectory}); mount only files inside the directory that holds the batch spec`,
    ]);
  });

  it("rejects an absolute path outside the directory", () => {
    expect(problems(["/etc/passwd"])).toEqual([
      `spec.yaml:6:15: steps[0].mount[0].path: mount path "/etc/passwd" is outside the spec's directory (${specDirectory}); mount only files inside the directory that holds the batch spec`,
    ]);
  });

  it("rejects a symlink that leads outside the directory", () => {
    expect(problems(["escape"])).toEqual([
      `spec.yaml:6:15: steps[0].mount[0].path: mount path "escape" leads through a symlink to ${root}/secret.txt, outside the spec's directory (${specDirectory}); mount only files inside the directory that holds the batch spec`,
    ]);
  });

  it("rejects a path that does not exist", () => {
    expect(problems(["missing.sh"])).toEqual([
      `spec.yaml:6:15: steps[0].mount[0].path: mount path "missing.sh" does not exist in the spec's directory (${specDirectory}); create it or correct the path`,
    ]);
  });

  it("checks nothing on disk without a spec directory", () => {
    const text =
      "name: x\nsteps:\n  - run: a\n    container: b\n    mount: [{path: ../x, mountpoint: /x}]\nchangesetTemplate: {title: t, branch: b, commit: {message: m}}\n";
    expect(parseBatchSpec(text, { file: "spec.yaml" }).diagnostics).toEqual([]);
  });
});
