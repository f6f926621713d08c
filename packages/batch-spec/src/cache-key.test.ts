import { WireEnv } from "@deckhand/wire";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type CacheKeyInput,
  canonicalJson,
  computeCacheKey,
  type StepRuntimeKey,
} from "./cache-key.ts";

function baseInput(): CacheKeyInput {
  return {
    repository: {
      id: "UmVwb3NpdG9yeTox",
      name: "github.com/acme/api",
      baseRef: "refs/heads/main",
      baseRev: "4f2c9a1",
      fileMatches: ["b.go", "a.go"],
    },
    path: "services/api",
    onlyFetchWorkspace: false,
    steps: [
      { run: "gofmt -w .", container: "golang:1.23", env: ["GOFLAGS", { CGO_ENABLED: "0" }] },
      {
        codingAgent: { type: "codex", prompt: "Fix the tests" },
        image: "node:22",
        files: { "/tmp/a": "x" },
      },
    ],
    batchChange: { name: "upgrade", description: "Upgrade" },
    stepIndex: 1,
    runnerEnv: { GOFLAGS: "-mod=mod" },
    mountedFiles: [
      { path: "scripts/fix.sh", size: 120, mtime: new Date("2025-01-02T03:04:05.000Z") },
    ],
    runtimes: [
      { runtime: "container", imageId: "sha256:golang" },
      { runtime: "container", imageId: "sha256:node" },
    ],
  };
}

/** Rebuilds an object with its keys in reverse order, at every level. */
function reverseKeys<Value>(value: Value): Value {
  if (Array.isArray(value)) return value.map(reverseKeys) as Value;
  if (value !== null && typeof value === "object" && !(value instanceof Date)) {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([key, inner]) => [key, reverseKeys(inner)]),
    ) as Value;
  }
  return value;
}

describe("computeCacheKey", () => {
  it("is a sha256 in hex, stable across calls and processes (a fixed vector)", () => {
    const key = computeCacheKey(baseInput());
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(computeCacheKey(baseInput())).toBe(key);
    expect(key).toMatchInlineSnapshot(
      `"bab0a823ee6e42348e5699d0fee60c99e3caf6cc466f0cd882adf8b2b5ade549"`,
    );
  });

  it("sorts keys in the canonical JSON", () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }] })).toBe('{"a":[{"d":2}],"b":1}');
  });

  it("does not depend on key order, file match order, mount order or image vs container", () => {
    const input = baseInput();
    const variant: CacheKeyInput = {
      ...reverseKeys(input),
      repository: { ...input.repository, fileMatches: ["a.go", "b.go"] },
      steps: [input.steps[0]!, { ...input.steps[1]!, image: undefined, container: "node:22" }],
      mountedFiles: [
        { path: "scripts/fix.sh", size: 120, mtime: Date.parse("2025-01-02T03:04:05.000Z") },
      ],
    };
    expect(computeCacheKey(variant)).toBe(computeCacheKey(input));
  });

  it("ignores the per-job model-provider token and job id", () => {
    const input = baseInput();
    const withJobValues: CacheKeyInput = {
      ...input,
      steps: [
        {
          ...input.steps[0]!,
          env: ["GOFLAGS", { CGO_ENABLED: "0" }, WireEnv.modelProviderToken, WireEnv.jobId],
        },
        input.steps[1]!,
      ],
      runnerEnv: {
        ...input.runnerEnv,
        [WireEnv.modelProviderToken]: "secret-token",
        [WireEnv.jobId]: "job-7",
      },
    };
    expect(computeCacheKey(withJobValues)).toBe(computeCacheKey(input));
  });

  it("gives env as a map and as a list the same key when they resolve alike", () => {
    const input = baseInput();
    const asMap: CacheKeyInput = {
      ...input,
      steps: [
        { ...input.steps[0]!, env: { GOFLAGS: "-mod=mod", CGO_ENABLED: "0" } },
        input.steps[1]!,
      ],
    };
    expect(computeCacheKey(asMap)).toBe(computeCacheKey(input));
  });

  it("covers only steps up to the index", () => {
    const input = { ...baseInput(), stepIndex: 0 };
    const changedLater = { ...input, steps: [input.steps[0]!, { run: "other", container: "x" }] };
    expect(computeCacheKey(changedLater)).toBe(computeCacheKey(input));
  });

  const relevantChanges: [string, (input: CacheKeyInput) => CacheKeyInput][] = [
    ["repository id", (input) => ({ ...input, repository: { ...input.repository, id: "other" } })],
    [
      "repository name",
      (input) => ({ ...input, repository: { ...input.repository, name: "github.com/x/y" } }),
    ],
    [
      "base ref",
      (input) => ({ ...input, repository: { ...input.repository, baseRef: "refs/heads/dev" } }),
    ],
    [
      "base revision",
      (input) => ({ ...input, repository: { ...input.repository, baseRev: "000000" } }),
    ],
    [
      "file matches",
      (input) => ({ ...input, repository: { ...input.repository, fileMatches: ["a.go"] } }),
    ],
    ["workspace path", (input) => ({ ...input, path: "" })],
    ["onlyFetchWorkspace", (input) => ({ ...input, onlyFetchWorkspace: true })],
    [
      "a step's command",
      (input) => ({
        ...input,
        steps: [{ ...input.steps[0]!, run: "gofmt -l ." }, input.steps[1]!],
      }),
    ],
    [
      "a step's image",
      (input) => ({ ...input, steps: [input.steps[0]!, { ...input.steps[1]!, image: "node:20" }] }),
    ],
    [
      "a prompt",
      (input) => ({
        ...input,
        steps: [
          input.steps[0]!,
          { ...input.steps[1]!, codingAgent: { type: "codex", prompt: "x" } },
        ],
      }),
    ],
    [
      "batch change name",
      (input) => ({ ...input, batchChange: { ...input.batchChange, name: "other" } }),
    ],
    [
      "batch change description",
      (input) => ({ ...input, batchChange: { ...input.batchChange, description: "" } }),
    ],
    ["step index", (input) => ({ ...input, stepIndex: 0 })],
    [
      "a passed-through env value",
      (input) => ({ ...input, runnerEnv: { GOFLAGS: "-mod=vendor" } }),
    ],
    [
      "an env value",
      (input) => ({
        ...input,
        steps: [{ ...input.steps[0]!, env: ["GOFLAGS", { CGO_ENABLED: "1" }] }, input.steps[1]!],
      }),
    ],
    [
      "a mounted file's size",
      (input) => ({ ...input, mountedFiles: [{ ...input.mountedFiles![0]!, size: 121 }] }),
    ],
    [
      "a mounted file's mtime",
      (input) => ({ ...input, mountedFiles: [{ ...input.mountedFiles![0]!, mtime: 0 }] }),
    ],
    [
      "a mounted file's path",
      (input) => ({ ...input, mountedFiles: [{ ...input.mountedFiles![0]!, path: "x" }] }),
    ],
    // Where a step ran: a local result is not reused for a container run, nor one made in
    // another image that has the same name.
    [
      "the runtime, local instead of a container",
      (input) => ({
        ...input,
        runtimes: [input.runtimes![0]!, { runtime: "local", shell: "bash" }],
      }),
    ],
    [
      "an earlier step's runtime",
      (input) => ({
        ...input,
        runtimes: [{ runtime: "local", shell: "bash" }, input.runtimes![1]!],
      }),
    ],
    [
      "the image id behind the same image name",
      (input) => ({
        ...input,
        runtimes: [input.runtimes![0]!, { runtime: "container", imageId: "sha256:rebuilt" }],
      }),
    ],
    [
      "the runtime, a Kubernetes Job instead of a container",
      (input) => ({
        ...input,
        runtimes: [input.runtimes![0]!, { runtime: "kubernetes", image: "alpine:3" }],
      }),
    ],
    [
      "the local shell",
      (input) => ({
        ...input,
        runtimes: [
          { runtime: "local", shell: "sh" },
          { runtime: "local", shell: "bash" },
        ],
      }),
    ],
  ];

  it("does not depend on a later step's runtime, nor on fields a runtime object carries besides", () => {
    const input = baseInput();
    const first = { ...input, stepIndex: 0 };
    expect(
      computeCacheKey({
        ...first,
        runtimes: [input.runtimes![0]!, { runtime: "local", shell: "sh" }],
      }),
    ).toBe(computeCacheKey(first));
    expect(
      computeCacheKey({
        ...input,
        // A caller's placement object may carry more (the image's name); only the key fields count.
        runtimes: input.runtimes!.map((runtime): StepRuntimeKey => {
          const placement = { ...runtime!, image: "name:tag" };
          return placement;
        }),
      }),
    ).toBe(computeCacheKey(input));
  });

  it("keys a Kubernetes step by the image reference it names", () => {
    const input = baseInput();
    const kubernetes = (image: string): CacheKeyInput => ({
      ...input,
      runtimes: [input.runtimes![0]!, { runtime: "kubernetes", image }],
    });
    expect(computeCacheKey(kubernetes("alpine:3"))).toBe(computeCacheKey(kubernetes("alpine:3")));
    expect(computeCacheKey(kubernetes("alpine:3"))).not.toBe(
      computeCacheKey(kubernetes("alpine@sha256:0123")),
    );
  });

  it.each(relevantChanges)("changes when %s changes", (_name, change) => {
    expect(computeCacheKey(change(baseInput()))).not.toBe(computeCacheKey(baseInput()));
  });

  const stepArbitrary = fc.record(
    {
      run: fc.string({ maxLength: 20 }),
      image: fc.string({ minLength: 1, maxLength: 10 }),
      env: fc.dictionary(fc.stringMatching(/^[A-Z]{1,5}$/), fc.string({ maxLength: 5 }), {
        maxKeys: 3,
      }),
      files: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.string({ maxLength: 5 }), {
        maxKeys: 2,
      }),
      if: fc.oneof(fc.boolean(), fc.string({ maxLength: 5 })),
    },
    { requiredKeys: ["run", "image"] },
  );

  it("property: key order and the image/container spelling never change the key", () => {
    fc.assert(
      fc.property(
        fc.array(stepArbitrary, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        (steps, pick) => {
          const input: CacheKeyInput = {
            ...baseInput(),
            steps,
            stepIndex: pick % steps.length,
            mountedFiles: [],
          };
          const respelled = steps.map(({ image, ...rest }) =>
            reverseKeys({ ...rest, container: image }),
          );
          expect(computeCacheKey({ ...reverseKeys(input), steps: respelled })).toBe(
            computeCacheKey(input),
          );
        },
      ),
    );
  });

  it("property: changing any covered step's command changes the key", () => {
    fc.assert(
      fc.property(
        fc.array(stepArbitrary, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 5 }),
        (steps, pick, suffix) => {
          const stepIndex = pick % steps.length;
          const input: CacheKeyInput = { ...baseInput(), steps, stepIndex, mountedFiles: [] };
          const target = pick % (stepIndex + 1);
          const changed = steps.map((step, index) =>
            index === target ? { ...step, run: step.run + suffix } : step,
          );
          expect(computeCacheKey({ ...input, steps: changed })).not.toBe(computeCacheKey(input));
        },
      ),
    );
  });
});
