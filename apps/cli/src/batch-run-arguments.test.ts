import { WireEnv } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { parseBatchRunArguments, parseDuration, specDirectoryOf } from "./batch-run-arguments.ts";
import { UsageError } from "./usage-error.ts";

const context = { cwd: "/home/me/specs", env: {}, cpuCount: 6 };

function parse(argv: string[], action: "preview" | "apply" = "preview", env = {}) {
  const parsed = parseBatchRunArguments(action, argv, { ...context, env });
  if (parsed === null) throw new Error("help");
  return parsed;
}

function usageError(argv: string[], action: "preview" | "apply" = "preview"): string {
  try {
    parseBatchRunArguments(action, argv, context);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(" ")}`);
}

describe("parseDuration", () => {
  it("reads src-cli's durations in milliseconds", () => {
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("30m")).toBe(1_800_000);
    expect(parseDuration("2h")).toBe(7_200_000);
    expect(parseDuration("1h30m")).toBe(5_400_000);
    expect(parseDuration("1.5h")).toBe(5_400_000);
    expect(parseDuration("1500ms")).toBe(1_500);
    expect(parseDuration(" 45s ")).toBe(45_000);
  });

  it("refuses what is not a duration", () => {
    for (const text of ["", "30", "m", "30x", "-5m", "1d", "5 m", "1h-30m", "abc"]) {
      expect(parseDuration(text)).toBeNull();
    }
  });
});

describe("parseBatchRunArguments", () => {
  it("runs in this process by default: one workspace a CPU, no options sent the server fills", () => {
    const parsed = parse(["spec.yaml"]);
    expect(parsed).toEqual({
      action: "preview",
      specPath: "spec.yaml",
      specFile: "/home/me/specs/spec.yaml",
      json: false,
      target: { kind: "embedded", dataDir: undefined, concurrency: 6 },
      options: { parallelism: 6 },
    });
    expect(specDirectoryOf(parsed)).toBe("/home/me/specs");
  });

  it("turns every option into the run request's snake_case options", () => {
    const parsed = parse([
      "../other/spec.yaml",
      "--code-host",
      "code",
      "--code-host",
      "/srv/git",
      "--runtime",
      "local",
      "-j",
      "2",
      "--timeout",
      "30m",
      "--clear-cache",
      "--skip-errors",
      "--fail-fast",
      "--keep-logs",
      "--force-override-ignore",
      "--json",
      "--data-dir",
      "data",
    ]);
    expect(parsed.specFile).toBe("/home/me/other/spec.yaml");
    expect(specDirectoryOf(parsed)).toBe("/home/me/other");
    expect(parsed.json).toBe(true);
    expect(parsed.target).toEqual({
      kind: "embedded",
      dataDir: "/home/me/specs/data",
      concurrency: 2,
    });
    expect(parsed.options).toEqual({
      code_host_directories: ["/home/me/specs/code", "/srv/git"],
      runtime: "local",
      parallelism: 2,
      timeout_ms: 1_800_000,
      clear_cache: true,
      skip_errors: true,
      fail_fast: true,
      keep_logs: true,
      force_override_ignore: true,
    });
  });

  it("takes -j in every spelling", () => {
    expect(parse(["s.yaml", "-j4"]).options.parallelism).toBe(4);
    expect(parse(["s.yaml", "--parallelism", "8"]).options.parallelism).toBe(8);
  });

  it("talks to a server with --server, its token from --token or the environment", () => {
    expect(parse(["s.yaml", "--server", "http://deckhand:7420/", "--token", "t0k"]).target).toEqual(
      { kind: "server", url: "http://deckhand:7420", token: "t0k" },
    );
    const fromEnvironment = parse(["s.yaml", "--server", "https://d.example"], "preview", {
      [WireEnv.adminToken]: "from-env",
    });
    expect(fromEnvironment.target).toEqual({
      kind: "server",
      url: "https://d.example",
      token: "from-env",
    });
    // The server's executors decide how much runs at once unless -j says.
    expect(fromEnvironment.options).toEqual({});
    expect(parse(["s.yaml", "--server", "http://d", "-j", "3"]).options).toEqual({
      parallelism: 3,
    });
  });

  it("takes apply's options for apply only", () => {
    expect(parse(["s.yaml", "--push", "--refuse"], "apply").options).toEqual({
      parallelism: 6,
      push: true,
      on_conflict: "refuse",
    });
    expect(parse(["s.yaml", "--rebase"], "apply").options.on_conflict).toBe("rebase");
    expect(
      parse(["s.yaml", "--publish-rate", "12", "--delete-branches"], "apply").options,
    ).toMatchObject({ publish_rate: 12, delete_branches: true });
    expect(usageError(["s.yaml", "--publish-rate", "0"], "apply")).toMatch(/--publish-rate/);
    expect(usageError(["s.yaml", "--publish-rate", "5"])).toMatch(/batch apply/);
    expect(usageError(["s.yaml", "--push"])).toMatch(/^Unknown option '--push'/);
  });

  it("answers --help with null", () => {
    expect(parseBatchRunArguments("apply", ["--help"], context)).toBeNull();
    expect(parseBatchRunArguments("preview", ["s.yaml", "-h"], context)).toBeNull();
  });

  it("names what is wrong with bad usage", () => {
    expect(usageError([])).toBe("preview takes one spec file");
    expect(usageError(["a.yaml", "b.yaml"])).toBe("preview takes one spec file");
    expect(usageError(["s.yaml", "--runtime", "docker"])).toBe(
      '--runtime must be auto, local, container or kubernetes, got "docker"',
    );
    expect(usageError(["s.yaml", "-j", "0"])).toMatch(/^-j must be a number of workspaces/);
    expect(usageError(["s.yaml", "-j", "two"])).toMatch(/^-j must be a number of workspaces/);
    expect(usageError(["s.yaml", "--timeout", "30"])).toMatch(
      /^--timeout must be a duration such as 30m/,
    );
    expect(usageError(["s.yaml", "--timeout", "500ms"])).toBe(
      '--timeout must be between 1s and 168h, got "500ms"',
    );
    expect(usageError(["s.yaml", "--rebase", "--refuse"], "apply")).toMatch(/exclude each other/);
    expect(usageError(["s.yaml", "--server", "deckhand:7420"])).toMatch(
      /^--server must be an http\(s\) URL/,
    );
    expect(usageError(["s.yaml", "--server", "http://d", "--data-dir", "x"])).toMatch(
      /^--data-dir is for the server this command starts/,
    );
    expect(usageError(["s.yaml", "--token", "t"])).toMatch(/^--token is for --server/);
    expect(usageError(["s.yaml", "--code-hots", "x"])).toMatch(/^Unknown option '--code-hots'/);
  });
});
