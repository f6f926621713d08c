import { spawnSync } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { WireEnv } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { runBatchCommand } from "./batch-command.ts";

const fixtures = fileURLToPath(new URL("../test/fixtures/batch", import.meta.url));

async function run(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runBatchCommand(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    cwd: fixtures,
  });
  return { code, stdout, stderr };
}

describe("deckhand batch validate", () => {
  it("prints a short OK line and exits 0 for a valid spec", async () => {
    expect(await run(["validate", "valid.yaml"])).toEqual({
      code: 0,
      stdout: "valid.yaml: OK (version 3, 2 steps)\n",
      stderr: "",
    });
  });

  it("lists every problem as file:line:column: field.path: message and exits 1", async () => {
    const result = await run(["validate", "invalid.yaml"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.split("\n")).toEqual([
      'invalid.yaml:1:7: name: the batch change name may contain only letters, digits, "_", "." and "-" (no spaces or newlines); got "broken spec"',
      "invalid.yaml:2:1: steps: the spec has steps but no changesetTemplate; add a changesetTemplate (title, branch and commit.message) so the changes become changesets",
      'invalid.yaml:3:5: steps[0]: missing "container": a step runs in a container image; add container: <image>',
      'invalid.yaml:3:19: steps[0].run: unknown variable "repository.nmae"; did you mean "repository.name"?',
      'invalid.yaml:4:5: steps[0].contaner: unknown field "contaner"; did you mean "container"?',
      'invalid.yaml:5:5: steps[1].codingAgent: codingAgent steps need version 3; add "version: 3" at the top of the spec and give the step an "image"',
      "invalid.yaml: 6 problems",
      "",
    ]);
  });

  it("reports a YAML syntax error with its position", async () => {
    const result = await run(["validate", "syntax-error.yaml"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      "syntax-error.yaml:2:1: invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]\nsyntax-error.yaml: 1 problem\n",
    );
  });

  it("says so, without a stack trace, when the file cannot be read", async () => {
    expect(await run(["validate", "missing.yaml"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "deckhand batch validate: cannot read missing.yaml: no such file\n",
    });
  });

  it("answers a usage error with exit 2 and the command's usage", async () => {
    const result = await run(["validate"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /^deckhand batch: validate takes one spec file\n\nUsage: deckhand batch validate <spec>/,
    );
    const unknownOption = await run(["validate", "valid.yaml", "--strict"]);
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toMatch(/^deckhand batch: Unknown option '--strict'/);
    expect(unknownOption.stderr).not.toMatch(/\n\s+at /);
  });
});

describe("deckhand batch schema", () => {
  it("prints the JSON Schema", async () => {
    const result = await run(["schema"]);
    expect(result.code).toBe(0);
    const schema = JSON.parse(result.stdout) as {
      $schema: string;
      title: string;
      required: string[];
    };
    expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#");
    expect(schema.title).toBe("Deckhand batch spec");
    expect(schema.required).toEqual(["name"]);
  });
});

describe("deckhand batch render", () => {
  const renderArguments = [
    "render",
    "valid.yaml",
    "--step",
    "1",
    "--repository",
    "github.com/acme/api",
    "--agent-version",
    "0.169.0",
    "--model",
    "gpt-5-codex",
    "--model-provider-url",
    "https://deckhand.example/model-provider",
  ];

  it("prints the codingAgent step's script with the prompt templated for the repository", async () => {
    const result = await run(renderArguments);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^#!\/bin\/sh\n/);
    expect(result.stdout).toContain(
      "'Fix the build of github.com/acme/api after the upgrade.\nContext: <outputs.summary>\n'",
    );
    expect(result.stdout).toContain("https://deckhand.example/model-provider/codex");
    expect(spawnSync("sh", ["-n"], { input: result.stdout }).status).toBe(0);
  });

  it("never prints the model-provider token from the environment", async () => {
    const previous = process.env[WireEnv.modelProviderToken];
    process.env[WireEnv.modelProviderToken] = "dh-token-that-must-not-leak";
    try {
      const result = await run(renderArguments);
      expect(result.code).toBe(0);
      expect(result.stdout + result.stderr).not.toContain("dh-token-that-must-not-leak");
    } finally {
      if (previous === undefined) delete process.env[WireEnv.modelProviderToken];
      else process.env[WireEnv.modelProviderToken] = previous;
    }
  });

  it("quotes a hostile prompt so the shell reads it back unchanged", async () => {
    const result = await run([
      "render",
      "hostile-prompt.yaml",
      "--step",
      "0",
      "--repository",
      "r",
      "--agent-version",
      "0.169.0",
      "--model",
      "m",
    ]);
    expect(result.code).toBe(0);
    expect(spawnSync("sh", ["-n"], { input: result.stdout }).status).toBe(0);
    expect(result.stdout).toContain(`'Say $(rm -rf /) \`id\` '\\'' " in r'`);
  });

  it("notes placeholders when no version or model is given", async () => {
    const result = await run(["render", "valid.yaml", "--step", "1", "--repository", "r"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      "note: rendered with placeholders (version AGENT_VERSION, model MODEL); pass --agent-version and --model for a script that runs\n",
    );
  });

  it("explains a step that is not a codingAgent step, or does not exist", async () => {
    expect(await run(["render", "valid.yaml", "--step", "0", "--repository", "r"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        'deckhand batch render: steps[0] is a run step; render prints codingAgent steps (a run step\'s script is its "run" text)\n',
    });
    expect((await run(["render", "valid.yaml", "--step", "5", "--repository", "r"])).stderr).toBe(
      "deckhand batch render: valid.yaml has 2 steps; --step 5 is not one of them (steps are counted from 0)\n",
    );
  });

  it("validates an acp step away from the server, and says it has no script to render", async () => {
    expect(await run(["validate", "acp-step.yaml"])).toEqual({
      code: 0,
      stdout: "acp-step.yaml: OK (version 3, 1 step)\n",
      stderr: "",
    });
    expect(await run(["render", "acp-step.yaml", "--step", "0", "--repository", "r"])).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "deckhand batch render: steps[0] runs provider opencode over ACP: it has no script to print; the server starts the provider's agent in the workspace and sends it the prompt\n",
    });
  });

  it("reports an unsupported platform as a render error", async () => {
    const result = await run([
      "render",
      "valid.yaml",
      "--step",
      "1",
      "--repository",
      "r",
      "--platform",
      "windows-x64",
    ]);
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "deckhand batch render: codex cannot be installed on windows/x64; supported platforms: linux/x64, linux/arm64, darwin/x64, darwin/arm64\n",
    });
  });

  it("requires --step and --repository", async () => {
    const result = await run(["render", "valid.yaml", "--repository", "r"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^deckhand batch: --step is required\n/);
  });

  it("refuses to render an invalid spec and lists its problems", async () => {
    const result = await run(["render", "invalid.yaml", "--step", "1", "--repository", "r"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'invalid.yaml:4:5: steps[0].contaner: unknown field "contaner"',
    );
  });
});

describe("deckhand batch", () => {
  it("prints its usage for --help and rejects unknown commands with exit 2", async () => {
    const help = await run(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: deckhand batch <command>/);
    const unknown = await run(["frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^deckhand batch: unknown command "frobnicate"\n/);
    for (const command of ["validate", "render", "schema", "preview", "apply"]) {
      const commandHelp = await run([command, "--help"]);
      expect(commandHelp.code).toBe(0);
      expect(commandHelp.stdout).toMatch(new RegExp(`^Usage: deckhand batch ${command}`));
    }
  });
});

describe("deckhand batch preview and apply", () => {
  it("answer bad usage with exit 2 and the command's usage, before starting anything", async () => {
    const missing = await run(["preview"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /^deckhand batch: preview takes one spec file\n\nUsage: deckhand batch preview <spec>/,
    );
    const applyOnly = await run(["preview", "valid.yaml", "--rebase"]);
    expect(applyOnly.code).toBe(2);
    expect(applyOnly.stderr).toMatch(/^deckhand batch: Unknown option '--rebase'/);
    const badTimeout = await run(["apply", "valid.yaml", "--timeout", "soon"]);
    expect(badTimeout.code).toBe(2);
    expect(badTimeout.stderr).toContain("Usage: deckhand batch apply <spec>");
  });

  it("exits 1 without a stack trace when the spec cannot be read", async () => {
    expect(await run(["preview", "missing.yaml", "--server", "http://127.0.0.1:9"])).toEqual({
      code: 1,
      stdout: "",
      stderr: "deckhand batch preview: cannot read missing.yaml: no such file\n",
    });
  });

  it("says where the server is when it cannot be reached", async () => {
    // A port nothing listens on any more.
    const server = createServer();
    await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolveClose) => server.close(resolveClose));
    const url = `http://127.0.0.1:${port}`;
    const result = await run(["preview", "valid.yaml", "--server", url]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `deckhand batch preview: cannot reach the Deckhand server at ${url} (ECONNREFUSED); start it with "deckhand up", or leave out --server to run the spec in this process\n`,
    );
  });
});
