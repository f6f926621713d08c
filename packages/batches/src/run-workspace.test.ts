import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createDb } from "@deckhand/db";
import type { BatchRunEvent } from "@deckhand/wire";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryAt, specFrom, temporaryDirectory, testEnvironment } from "../test/support.ts";
import { checkoutWorkspace } from "./checkout-workspace.ts";
import { DatabaseStepCache } from "./database-step-cache.ts";
import type { ExecutionEnvironmentOptions } from "./execution-environment.ts";
import { loadRepositories } from "./repositories.ts";
import { resolveWorkspaces, type Workspace } from "./resolve-workspaces.ts";
import {
  type RunWorkspaceOptions,
  runWorkspace,
  type WorkspaceRunResult,
} from "./run-workspace.ts";
import { MemoryStepCache, type StepCache } from "./step-cache.ts";

let scratch: ReturnType<typeof temporaryDirectory>;
let root: string;
let checkouts = 0;
beforeEach(() => {
  scratch = temporaryDirectory();
  root = join(scratch.path, "code");
  repositoryAt(join(root, "github.com/acme/api"), { "README.md": "# api\n", "src/a.txt": "a\n" });
  repositoryAt(join(root, "github.com/acme/web"), { "README.md": "# web\n" });
});
afterEach(() => scratch.remove());

async function workspacesOf(yaml: string): Promise<Workspace[]> {
  const repositories = await loadRepositories({ codeHosts: [{ type: "directory", path: root }] });
  return (await resolveWorkspaces(specFrom(yaml), { repositories })).workspaces;
}

interface Run {
  result: WorkspaceRunResult;
  events: BatchRunEvent[];
  directory: string;
}

/** Runs one workspace of `yaml` in a fresh checkout (a re-run starts from a clean checkout). */
async function run(
  yaml: string,
  options: Partial<Omit<RunWorkspaceOptions, "environment">> &
    Pick<ExecutionEnvironmentOptions, "outerEnvironment" | "containerRuntime"> & {
      cache: StepCache;
      repository?: string;
    },
): Promise<Run> {
  const { outerEnvironment, containerRuntime, ...rest } = options;
  // Version 1 steps name an image; the local runtime runs them with sh all the same.
  const withImages = yaml.replace(/^ {2}- (run|if):/gm, "  - container: alpine:3\n    $1:");
  const spec = specFrom(withImages);
  const workspaces = await workspacesOf(withImages);
  const workspace = workspaces.find(
    (candidate) => candidate.repository.name === (options.repository ?? "github.com/acme/api"),
  )!;
  checkouts += 1;
  const directory = join(scratch.path, `checkout-${checkouts}`);
  const checkout = await checkoutWorkspace(workspace, directory);
  const events: BatchRunEvent[] = [];
  const result = await runWorkspace({
    workspace,
    spec,
    checkout,
    runtime: "local",
    specDirectory: scratch.path,
    environment: testEnvironment(scratch.path, {
      outerEnvironment: outerEnvironment ?? { PATH: process.env.PATH, HOME: process.env.HOME },
      ...(containerRuntime !== undefined ? { containerRuntime } : {}),
    }),
    onEvent: (event) => events.push(event),
    ...rest,
  });
  return { result, events, directory };
}

const onApi = `
name: demo
description: A demo
on:
  - repository: github.com/acme/api
changesetTemplate:
  title: Demo
  branch: demo
  commit:
    message: Demo
`;

describe("runWorkspace with the local runtime", () => {
  it("runs the steps in order in the workspace directory and collects the diff after each", async () => {
    const { result, events } = await run(
      `${onApi}
steps:
  - run: echo hello >> README.md && pwd
  - run: rm src/a.txt && echo new > added.txt
`,
      { cache: new MemoryStepCache() },
    );
    expect(result.status).toBe("completed");
    expect(result.steps.map((step) => [step.stepIndex, step.outcome, step.runtime])).toEqual([
      [0, "run", "local"],
      [1, "run", "local"],
    ]);
    expect(result.steps[0]!.stdout).toMatch(/checkout-\d+\n$/);
    expect(result.result!.files.map((file) => [file.status, file.path])).toEqual([
      ["modified", "README.md"],
      ["added", "added.txt"],
      ["deleted", "src/a.txt"],
    ]);
    expect(result.result!.diff).toContain("+hello");
    expect(events.map((event) => event.type)).toEqual([
      "workspace_started",
      "step_runtime_fallback",
      "step_started",
      "step_output",
      "step_finished",
      "step_runtime_fallback",
      "step_started",
      "step_finished",
      "workspace_finished",
    ]);
  });

  it("feeds outputs, previous_step and steps.modified_files into later templates", async () => {
    const { result } = await run(
      `${onApi}
steps:
  - run: |
      echo changed >> README.md && echo '{"answer": 42}'
    outputs:
      answer:
        value: \${{ step.stdout }}
        format: json
      name:
        value: \${{ repository.name }}
  - run: echo '\${{ outputs.answer.answer }} \${{ outputs.name }} [\${{ previous_step.stdout }}] \${{ join steps.modified_files "," }} \${{ batch_change.name }}'
    env:
      GREETING: hi \${{ outputs.answer.answer }}
  - run: echo "$GREETING"
    env:
      GREETING: hi \${{ outputs.answer.answer }}
`,
      { cache: new MemoryStepCache() },
    );
    expect(result.status).toBe("completed");
    expect(result.steps[1]!.stdout).toBe(
      '42 github.com/acme/api [{"answer": 42}\n] README.md demo\n',
    );
    expect(result.steps[2]!.stdout).toBe("hi 42\n");
    expect(result.result!.outputs).toEqual({ answer: { answer: 42 }, name: "github.com/acme/api" });
  });

  it("skips a step whose if: renders false and records it as skipped", async () => {
    const { result, events } = await run(
      `${onApi}
steps:
  - run: echo one
    outputs:
      go:
        value: "no"
  - if: \${{ eq outputs.go "yes" }}
    run: echo skipped > skipped.txt
  - run: echo three > three.txt
`,
      { cache: new MemoryStepCache() },
    );
    expect(result.steps.map((step) => step.outcome)).toEqual(["run", "skipped", "run"]);
    expect(result.result!.files.map((file) => file.path)).toEqual(["three.txt"]);
    expect(events).toContainEqual(
      expect.objectContaining({ type: "step_finished", step_index: 1, outcome: "skipped" }),
    );
  });

  it("writes files: for the step to read, and removes them afterwards", async () => {
    const target = join(scratch.path, "input.txt");
    const { result } = await run(
      `${onApi}
steps:
  - run: cat ${target} > copied.txt
    files:
      ${target}: "from \${{ repository.name }}"
`,
      { cache: new MemoryStepCache() },
    );
    expect(result.status).toBe("completed");
    expect(result.result!.diff).toContain("+from github.com/acme/api");
    expect(existsSync(target)).toBe(false);
  });

  it("links a mount from the spec directory for a local step, and refuses files outside the temporary directory", async () => {
    writeFileSync(join(scratch.path, "data.txt"), "mounted data\n");
    const mountpoint = join(scratch.path, "mounted", "data.txt");
    const mounted = await run(
      `${onApi}
steps:
  - run: cat ${mountpoint} > data-copy.txt
    mount:
      - path: data.txt
        mountpoint: ${mountpoint}
`,
      { cache: new MemoryStepCache() },
    );
    expect(mounted.result.status).toBe("completed");
    expect(mounted.result.result!.diff).toContain("+mounted data");
    expect(existsSync(mountpoint)).toBe(false);

    const refused = await run(
      `${onApi}\nsteps:\n  - run: "true"\n    files:\n      /etc/deckhand-test.txt: nope\n`,
      { cache: new MemoryStepCache() },
    );
    expect(refused.result.status).toBe("failed");
    expect(refused.result.error).toContain(
      "/etc/deckhand-test.txt, which a local run can only create inside",
    );
  });

  it("parses yaml outputs and fails the workspace on an output that is not valid json", async () => {
    const parsed = await run(
      `${onApi}
steps:
  - run: printf 'names:\\n  - a\\n  - b\\n'
    outputs:
      list:
        value: \${{ step.stdout }}
        format: yaml
  - run: echo '\${{ index outputs.list.names 1 }}'
`,
      { cache: new MemoryStepCache() },
    );
    expect(parsed.result.result!.outputs).toEqual({ list: { names: ["a", "b"] } });
    expect(parsed.result.steps[1]!.stdout).toBe("b\n");

    const broken = await run(
      `${onApi}\nsteps:\n  - run: echo not-json\n    outputs:\n      value:\n        value: \${{ step.stdout }}\n        format: json\n`,
      { cache: new MemoryStepCache() },
    );
    expect(broken.result.status).toBe("failed");
    expect(broken.result.error).toContain('output "value" is not valid json');
  });

  it("fails the workspace with the step's stderr when a step exits non-zero", async () => {
    const { result, events } = await run(
      `${onApi}
steps:
  - run: echo broken >&2; exit 3
  - run: echo never > never.txt
`,
      { cache: new MemoryStepCache() },
    );
    expect(result.status).toBe("failed");
    expect(result.error).toBe("step 0 failed with exit code 3: broken");
    expect(result.steps).toHaveLength(1);
    expect(result.steps[0]).toMatchObject({ outcome: "failed", exitCode: 3, stderr: "broken\n" });
    expect(events.at(-1)).toMatchObject({ type: "workspace_finished", status: "failed" });
  });

  it("fails the workspace without running the step when its run template does not render", async () => {
    const { result, events } = await run(
      `${onApi}
steps:
  - run: |
      echo '{"list": [1]}'
    outputs:
      data:
        value: \${{ step.stdout }}
        format: json
  - run: echo \${{ index outputs.data.list 3 }} >> ${join(scratch.path, "ran")}
`,
      { cache: new MemoryStepCache() },
    );
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/^step 1 failed: .*index/);
    expect(existsSync(join(scratch.path, "ran"))).toBe(false);
    expect(events.filter((event) => event.type === "step_started")).toHaveLength(1);
  });

  it("says a step was killed by a signal when its shell dies of one", async () => {
    const { result } = await run(`${onApi}\nsteps:\n  - run: kill -9 $$\n`, {
      cache: new MemoryStepCache(),
    });
    expect(result.status).toBe("failed");
    expect(result.error).toBe("step 0 was killed by a signal");
  });

  it("kills a step that outlives the workspace timeout", async () => {
    const started = Date.now();
    const { result } = await run(`${onApi}\nsteps:\n  - run: sleep 30 & wait\n`, {
      cache: new MemoryStepCache(),
      timeoutMs: 500,
    });
    expect(result.status).toBe("timed_out");
    expect(result.error).toContain("within 500 ms");
    // Well short of the step's 30 s, however busy the machine.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("passes output on in chunks of at most 8 KiB that never split a character, and keeps a long line whole", async () => {
    const { result, events } = await run(
      `${onApi}\nsteps:\n  - run: awk 'BEGIN { printf "x"; for (i = 0; i < 9000; i++) printf "é" }'\n`,
      { cache: new MemoryStepCache() },
    );
    const chunks = events.flatMap((event) =>
      event.type === "step_output" && event.stream === "stdout" ? [event.text] : [],
    );
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(Buffer.byteLength(chunk)).toBeLessThanOrEqual(8192);
    expect(chunks.join("")).toBe(`x${"é".repeat(9000)}`);
    expect(result.steps[0]!.stdout).toBe(`x${"é".repeat(9000)}`);
  });

  it("ends a step when its script exits, killing what it left running in the background", async () => {
    const started = Date.now();
    const { result } = await run(`${onApi}\nsteps:\n  - run: (sleep 30 &) ; echo done\n`, {
      cache: new MemoryStepCache(),
      timeoutMs: 15_000,
    });
    expect(result.status).toBe("completed");
    expect(result.steps[0]!.stdout).toBe("done\n");
    // Well short of the step's 30 s, however busy the machine.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("stops the running step when the signal aborts and ends the workspace cancelled", async () => {
    const controller = new AbortController();
    const started = Date.now();
    const { result } = await run(
      `${onApi}\nsteps:\n  - run: echo running && sleep 30\n  - run: echo never > never.txt\n`,
      {
        cache: new MemoryStepCache(),
        signal: controller.signal,
        // Aborted once the step runs (its first output), not after a fixed time that a loaded
        // machine may not have reached the step in.
        onEvent: (event) => {
          if (event.type === "step_output") controller.abort();
        },
      },
    );
    expect(result.status).toBe("cancelled");
    expect(result.steps.map((step) => step.stepIndex)).toEqual([0]);
    // Well short of the step's 30 s, however busy the machine.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("redacts secret values from step output", async () => {
    const { result, events } = await run(
      `${onApi}\nsteps:\n  - run: echo "token $MY_TOKEN"\n    env:\n      - MY_TOKEN\n`,
      {
        cache: new MemoryStepCache(),
        outerEnvironment: { PATH: process.env.PATH, MY_TOKEN: "s3cr3t-value-123" },
      },
    );
    expect(result.steps[0]!.stdout).toBe("token [REDACTED]\n");
    expect(JSON.stringify(events)).not.toContain("s3cr3t-value-123");
  });

  it("loops over repository.search_result_paths in shell, as real specs do", async () => {
    repositoryAt(join(root, "github.com/acme/todo"), {
      "a.txt": "TODO one\n",
      "deep/b.txt": "TODO two\n",
      "c.txt": "nothing\n",
    });
    const { result } = await run(
      `
name: todos
on:
  - repositoriesMatchingQuery: repo:todo TODO
steps:
  - run: for f in \${{ repository.search_result_paths }}; do sed -i 's/TODO/DONE/' "$f"; echo "$f"; done
changesetTemplate:
  title: t
  branch: b
  commit:
    message: m
`,
      { cache: new MemoryStepCache(), repository: "github.com/acme/todo" },
    );
    expect(result.error).toBeNull();
    expect(result.steps[0]!.stdout).toBe("a.txt\ndeep/b.txt\n");
    expect(result.result!.files.map((file) => file.path)).toEqual(["a.txt", "deep/b.txt"]);
  });

  it("runs a local step with bash where there is one, so src-cli's hello world works, and says so", async () => {
    repositoryAt(join(root, "github.com/acme/hello"), {
      "README.md": "# hello\n",
      "internal/README.md": "# internal\n",
    });
    // src-cli's hello world: under dash, IFS=$'\n' is the characters $ ' \ n, which split
    // ./internal/README.md into paths that do not exist.
    const { result, events } = await run(
      `
name: hello
on:
  - repository: github.com/acme/hello
steps:
  - run: IFS=$'\\n'; echo Hello World | tee -a $(find -name README.md)
changesetTemplate:
  title: t
  branch: b
  commit:
    message: m
`,
      { cache: new MemoryStepCache(), repository: "github.com/acme/hello" },
    );
    expect(result.error).toBeNull();
    expect(result.result!.files.map((file) => file.path)).toEqual([
      "README.md",
      "internal/README.md",
    ]);
    expect(result.steps[0]!.shell).toMatch(/\/bash$/);
    expect(events.find((event) => event.type === "step_started")).toMatchObject({
      shell: expect.stringMatching(/\/bash$/),
    });
  });

  it("tells the step's command and environment as it starts, secrets redacted", async () => {
    const { events } = await run(
      `${onApi}\nsteps:\n  - run: echo "$GREETING"\n    env:\n      GREETING: hello\n      MY_TOKEN: s3cr3t-value-123\n      HEADER: "Bearer s3cr3t-value-123"\n`,
      { cache: new MemoryStepCache() },
    );
    const started = events.find((event) => event.type === "step_started");
    expect(started).toMatchObject({
      command: 'echo "$GREETING"',
      env: { GREETING: "hello", MY_TOKEN: "[REDACTED]", HEADER: "Bearer [REDACTED]" },
    });
  });

  it("says a command that was not found may be in the step's unused image, and how to use it", async () => {
    const { result } = await run(
      `${onApi}\nsteps:\n  - run: deckhand-no-such-tool -in-place 'fmt.Sprintf(":[x]")' .go\n`,
      { cache: new MemoryStepCache() },
    );
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(
      /^step 0 failed with exit code 127: .*deckhand-no-such-tool.*not found\n/,
    );
    expect(result.error!.split("\n").at(-1)).toBe(
      'a command the step runs was not found on this machine; the step names image alpine:3, which was not used (the run uses the local runtime: the step runs on this machine): run with runtime "container" (--runtime container) so it runs in that image, or install the command here',
    );
  });

  it("reports a step's container as not used when the runtime is local", async () => {
    const { result, events } = await run(`${onApi}\nsteps:\n  - run: echo hi > hi.txt\n`, {
      cache: new MemoryStepCache(),
    });
    expect(result.status).toBe("completed");
    expect(events).toContainEqual(
      expect.objectContaining({ type: "step_runtime_fallback", step_index: 0, image: "alpine:3" }),
    );
  });
});

/**
 * Runs `body` with a `podman` and a `docker` on PATH whose `info` fails as a stopped Podman
 * service and a Docker client without a daemon do, so detection finds no runtime.
 */
async function withFakeRuntimes<Result>(body: () => Promise<Result>): Promise<Result> {
  const bin = join(scratch.path, "fake-runtimes");
  mkdirSync(bin);
  for (const [name, message] of [
    ["podman", "Error: unable to connect to Podman socket"],
    [
      "docker",
      "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
    ],
  ] as const) {
    writeFileSync(join(bin, name), `#!/bin/sh\necho '${message}' >&2\nexit 125\n`);
    chmodSync(join(bin, name), 0o755);
  }
  const path = process.env.PATH;
  process.env.PATH = `${bin}:${path}`;
  try {
    return await body();
  } finally {
    process.env.PATH = path;
  }
}

describe("runWorkspace with the auto runtime", () => {
  it("runs a step that names an image locally, saying so, when no container runtime works", async () => {
    const { result, events } = await run(`${onApi}\nsteps:\n  - run: echo hi > hi.txt\n`, {
      cache: new MemoryStepCache(),
      runtime: "auto",
      containerRuntime: null,
    });
    expect(result.status).toBe("completed");
    expect(result.steps[0]!.runtime).toBe("local");
    expect(events).toContainEqual({
      type: "step_runtime_fallback",
      workspace: expect.objectContaining({ repository: "github.com/acme/api" }),
      step_index: 0,
      image: "alpine:3",
      reason: "no container runtime works on this machine: the step runs on this machine",
    });
  });

  it("says why no runtime works, when it detects none, instead of falling back silently", async () => {
    const { result, events } = await withFakeRuntimes(() =>
      run(`${onApi}\nsteps:\n  - run: echo hi > hi.txt\n`, {
        cache: new MemoryStepCache(),
        runtime: "auto",
      }),
    );
    expect(result.status).toBe("completed");
    expect(events.find((event) => event.type === "step_runtime_fallback")).toMatchObject({
      reason:
        "no container runtime works on this machine (podman: the client is installed but `podman info` failed: Error: unable to connect to Podman socket; docker: the client is installed but `docker info` failed: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?): the step runs on this machine",
    });
  });

  it("with the container runtime required and none detected, fails with no_runtime and each reason", async () => {
    const { result } = await withFakeRuntimes(() =>
      run(`${onApi}\nsteps:\n  - run: echo hi > hi.txt\n`, {
        cache: new MemoryStepCache(),
        runtime: "container",
      }),
    );
    expect(result.status).toBe("failed");
    expect(result.error).toBe(
      'step 0 failed: image alpine:3 needs a container runtime (no_runtime): no container runtime works on this machine (podman: the client is installed but `podman info` failed: Error: unable to connect to Podman socket; docker: the client is installed but `docker info` failed: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?); install Podman or start a Docker daemon, or run the steps on this machine (runtime "local", --runtime local)',
    );
  });

  it("with the container runtime required and none working, fails the workspace saying what to install", async () => {
    const { result } = await run(`${onApi}\nsteps:\n  - run: echo hi > hi.txt\n`, {
      cache: new MemoryStepCache(),
      runtime: "container",
      containerRuntime: null,
    });
    expect(result.status).toBe("failed");
    expect(result.error).toContain("image alpine:3 needs a container runtime (no_runtime)");
  });
});

describe("the step cache", () => {
  const counted = () => join(scratch.path, "executions.log");
  const countingSpec = () => `${onApi}
steps:
  - run: echo one >> ${counted()} && echo one > one.txt
    outputs:
      first:
        value: first-\${{ step.stdout }}
  - run: echo two >> ${counted()} && echo "\${{ outputs.first }}" > two.txt
`;
  const executions = () =>
    existsSync(counted()) ? readFileSync(counted(), "utf8").trim().split("\n") : [];

  it("a fully cached re-run runs no step and restores the diff and outputs", async () => {
    const cache = new MemoryStepCache();
    const first = await run(countingSpec(), { cache });
    expect(executions()).toEqual(["one", "two"]);
    const second = await run(countingSpec(), { cache });
    expect(executions()).toEqual(["one", "two"]);
    expect(second.result.steps.map((step) => step.outcome)).toEqual(["cached", "cached"]);
    expect(second.result.result!.diff).toBe(first.result.result!.diff);
    expect(second.result.result!.outputs).toEqual({ first: "first-" });
    expect(readFileSync(join(second.directory, "two.txt"), "utf8")).toBe("first-\n");
  });

  it("a partially cached re-run resumes after the newest cached step", async () => {
    const cache = new MemoryStepCache();
    await run(countingSpec(), { cache });
    const changed = countingSpec().replace("> two.txt", "> second.txt");
    const second = await run(changed, { cache });
    expect(executions()).toEqual(["one", "two", "two"]);
    expect(second.result.steps.map((step) => step.outcome)).toEqual(["cached", "run"]);
    expect(second.result.result!.files.map((file) => file.path)).toEqual(["one.txt", "second.txt"]);
    expect(readFileSync(join(second.directory, "second.txt"), "utf8")).toBe("first-\n");
  });

  it("a re-run resumes from the database cache (step_results) as from the memory one", async () => {
    const handle = await createDb({ dataDir: "memory://" });
    try {
      const cache = new DatabaseStepCache(handle.db);
      const first = await run(countingSpec(), { cache });
      const second = await run(countingSpec(), { cache });
      expect(executions()).toEqual(["one", "two"]);
      expect(second.result.steps.map((step) => step.outcome)).toEqual(["cached", "cached"]);
      expect(second.result.result).toEqual(first.result.result);
    } finally {
      await handle.close();
    }
  });

  it("a cache that cannot be read fails the workspace with the reason instead of throwing", async () => {
    const unreadable: StepCache = {
      get: async () => {
        throw new Error("the database is down");
      },
      put: async () => {},
    };
    const { result, events } = await run(countingSpec(), { cache: unreadable });
    expect(result.status).toBe("failed");
    expect(result.error).toContain("the database is down");
    expect(executions()).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: "workspace_finished", status: "failed" });
  });

  it("clearCache runs every step again", async () => {
    const cache = new MemoryStepCache();
    await run(countingSpec(), { cache });
    const second = await run(countingSpec(), { cache, clearCache: true });
    expect(executions()).toEqual(["one", "two", "one", "two"]);
    expect(second.result.steps.map((step) => step.outcome)).toEqual(["run", "run"]);
  });

  it("a failed step is not cached, so the re-run runs it again", async () => {
    const cache = new MemoryStepCache();
    const flag = join(scratch.path, "fail");
    writeFileSync(flag, "");
    const spec = `${onApi}\nsteps:\n  - run: echo one >> ${counted()} && test ! -e ${flag}\n`;
    expect((await run(spec, { cache })).result.status).toBe("failed");
    expect((await run(spec, { cache })).result.steps[0]!.outcome).toBe("failed");
    expect(executions()).toEqual(["one", "one"]);
  });
});
