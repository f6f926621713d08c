import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ContainerRuntime } from "@deckhand/container-runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces } from "./resolve-workspaces.ts";
import { runWorkspace } from "./run-workspace.ts";
import { MemoryStepCache } from "./step-cache.ts";
import type { ImageLookups } from "./step-placement.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
beforeEach(() => {
  scratch = temporaryDirectory();
});
afterEach(() => scratch.remove());

/** The fake container CLI (fake-container-cli.cjs), logging each call to `log`. */
function fakeRuntime(log: string): ContainerRuntime {
  return {
    kind: "podman",
    binary: process.execPath,
    globalArgs: [fileURLToPath(new URL("./fake-container-cli.cjs", import.meta.url)), "--log", log],
    runArgs: [],
    version: "fake",
    rootless: false,
    restrictedHost: false,
  };
}

function calls(log: string): { command: string; args: string[] }[] {
  return readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { command: string; args: string[] });
}

describe("container steps", () => {
  it("start one engine process per step: a run looks its image up once, whatever its workspaces and steps", async () => {
    const root = join(scratch.path, "code");
    for (const name of ["api", "web"]) {
      repositoryAt(join(root, `github.com/acme/${name}`), { "README.md": `# ${name}\n` });
    }
    const spec = specFrom(`
name: boxed
on:
  - repositoriesMatchingQuery: repo:acme
steps:
  - run: echo one > one.txt
    container: busybox
  - run: echo two > two.txt
    container: busybox
changesetTemplate:
  title: Boxed
  branch: boxed
  commit:
    message: boxed
`);
    const log = join(scratch.path, "engine.log");
    const environment = testEnvironment(scratch.path, {
      outerEnvironment: { PATH: process.env.PATH },
      containerRuntime: fakeRuntime(log),
    });
    const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
    const { workspaces } = await resolveWorkspaces(spec, { repositories });
    expect(workspaces).toHaveLength(2);
    // What the workspace job shares between the workspaces of one run.
    const images: ImageLookups = new Map();
    for (const [index, workspace] of workspaces.entries()) {
      const checkout = await checkoutWorkspace(workspace, join(scratch.path, `checkout-${index}`));
      const result = await runWorkspace({
        workspace,
        spec,
        checkout,
        environment,
        runtime: "container",
        cache: new MemoryStepCache(),
        images,
      });
      expect(result.error).toBeNull();
      expect(result.result!.files.map((file) => file.path)).toEqual(["one.txt", "two.txt"]);
      await checkout.remove();
    }
    const made = calls(log);
    expect(made.filter((call) => call.command === "image inspect")).toHaveLength(1);
    const runs = made.filter((call) => call.command === "run").map((call) => call.args.at(-1));
    // The image's bash probe once for the process, then each step's own run.
    expect(runs).toEqual([
      "exit 0",
      "echo one > one.txt",
      "echo two > two.txt",
      "echo one > one.txt",
      "echo two > two.txt",
    ]);
    expect(made).toHaveLength(6);
  });
});
