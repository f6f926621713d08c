import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  BatchSpecError,
  createStepTemplateContext,
  defaultAgentRegistry,
  formatDiagnostic,
  parseBatchSpec,
  renderBatchSpecJsonSchema,
  renderCodingAgentStep,
  renderTemplate,
  resolveStepEnv,
  type TemplateValue,
} from "@deckhand/batch-spec";
import { errnoCode, errorMessage } from "@deckhand/errors";
import { WireEnv, WirePath } from "@deckhand/wire";

export interface BatchCommandIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** Spec paths are resolved against this directory. */
  cwd: string;
}

export const batchUsage = `Usage: deckhand batch <command> [options]

Commands:
  validate <spec>   check a batch spec (YAML or JSON): syntax, fields, version rules,
                    templates and mounts; lists every problem as file:line:column
  render <spec>     print the shell script a codingAgent step runs, secrets redacted
  schema            print the JSON Schema of batch specs, for editor completion

Run "deckhand batch <command> --help" for a command's options.
`;

const validateUsage = `Usage: deckhand batch validate <spec>

Checks a batch spec and prints "<spec>: OK" (exit 0), or every problem as
"file:line:column: field.path: message" (exit 1). Mount paths are checked against the
directory that holds the spec.
`;

const schemaUsage = `Usage: deckhand batch schema

Prints the JSON Schema of batch specs. Save it and point your editor at it, e.g. with
"# yaml-language-server: $schema=./batch-spec.schema.json" as a spec's first line.
`;

/** Placeholders for a preview render; the printed script says which values to pass instead. */
const placeholderVersion = "AGENT_VERSION";
const placeholderModel = "MODEL";

const renderUsage = `Usage: deckhand batch render <spec> --step N --repository NAME [options]

Prints the shell script a codingAgent step runs, with the prompt templated for one
repository and secrets redacted. Nothing is run.

Options:
  --step N                  the step, as in steps[N] (0 is the first step)
  --repository NAME         the repository the step runs in, e.g. github.com/acme/api
  --branch NAME             the repository branch templates see (default: empty)
  --model-provider-url URL  the model-provider proxy (default: $${WireEnv.modelProviderUrl},
                            else http://localhost${WirePath.modelProvider})
  --agent-version V         the agent version to install (default: the placeholder
                            ${placeholderVersion})
  --model M                 the model the agent asks for (default: the placeholder ${placeholderModel})
  --platform OS-ARCH        linux-x64 (default), linux-arm64, darwin-x64 or darwin-arm64
  --install-source SOURCE   release (default: the agent's release downloads) or npm
`;

class UsageError extends Error {}

/** Reads and parses the spec at `path`; its mounts are checked against the spec's directory. */
function parseSpecFile(path: string, io: BatchCommandIo): ReturnType<typeof parseBatchSpec> {
  const absolute = resolve(io.cwd, path);
  let text: string;
  try {
    text = readFileSync(absolute, "utf8");
  } catch (error) {
    const code = errnoCode(error);
    const reason =
      code === "ENOENT"
        ? "no such file"
        : code === "EISDIR"
          ? "it is a directory"
          : (errorMessage(error) ?? String(error));
    throw new BatchSpecError("unreadable_spec", `cannot read ${path}: ${reason}`, { cause: error });
  }
  return parseBatchSpec(text, { file: path, specDirectory: dirname(absolute) });
}

function parse(
  argv: string[],
  options: Record<string, { type: "string" | "boolean" }>,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { ...options, help: { type: "boolean" } },
      allowPositionals: true,
      strict: true,
    });
    return { values: values as Record<string, string | boolean | undefined>, positionals };
  } catch (error) {
    throw new UsageError(errorMessage(error));
  }
}

function validate(argv: string[], io: BatchCommandIo): number {
  const { values, positionals } = parse(argv, {});
  if (values.help) {
    io.stdout.write(validateUsage);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError("validate takes one spec file");
  const path = positionals[0]!;
  const { spec, diagnostics } = parseSpecFile(path, io);
  if (spec === undefined) {
    for (const diagnostic of diagnostics) io.stderr.write(`${formatDiagnostic(diagnostic)}\n`);
    io.stderr.write(
      `${path}: ${diagnostics.length} problem${diagnostics.length === 1 ? "" : "s"}\n`,
    );
    return 1;
  }
  const steps = spec.steps?.length ?? 0;
  io.stdout.write(
    `${path}: OK (version ${spec.version}, ${steps} step${steps === 1 ? "" : "s"})\n`,
  );
  return 0;
}

function schema(argv: string[], io: BatchCommandIo): number {
  const { values, positionals } = parse(argv, {});
  if (values.help) {
    io.stdout.write(schemaUsage);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError("schema takes no arguments");
  io.stdout.write(renderBatchSpecJsonSchema());
  return 0;
}

function requiredString(
  values: Record<string, string | boolean | undefined>,
  name: string,
): string {
  const value = values[name];
  if (typeof value !== "string" || value === "") throw new UsageError(`--${name} is required`);
  return value;
}

function render(argv: string[], io: BatchCommandIo, env: NodeJS.ProcessEnv): number {
  const { values, positionals } = parse(argv, {
    step: { type: "string" },
    repository: { type: "string" },
    branch: { type: "string" },
    "model-provider-url": { type: "string" },
    "agent-version": { type: "string" },
    model: { type: "string" },
    platform: { type: "string" },
    "install-source": { type: "string" },
  });
  if (values.help) {
    io.stdout.write(renderUsage);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError("render takes one spec file");
  const stepText = requiredString(values, "step");
  const repository = requiredString(values, "repository");
  if (!/^\d+$/.test(stepText))
    throw new UsageError(`--step must be a step index such as 0, got "${stepText}"`);
  const platformText = (values.platform as string | undefined) ?? "linux-x64";
  const [os, arch, ...extra] = platformText.split(/[-/]/);
  if (!os || !arch || extra.length > 0) {
    throw new UsageError(`--platform must look like linux-x64, got "${platformText}"`);
  }
  const installSourceName = (values["install-source"] as string | undefined) ?? "release";
  if (installSourceName !== "release" && installSourceName !== "npm") {
    throw new UsageError(`--install-source must be release or npm, got "${installSourceName}"`);
  }

  const path = positionals[0]!;
  const { spec, diagnostics } = parseSpecFile(path, io);
  if (spec === undefined) {
    for (const diagnostic of diagnostics) io.stderr.write(`${formatDiagnostic(diagnostic)}\n`);
    io.stderr.write(
      `${path}: fix these problems first; "deckhand batch validate" lists them too\n`,
    );
    return 1;
  }
  const steps = spec.steps ?? [];
  const index = Number(stepText);
  const step = steps[index];
  if (step === undefined) {
    throw new BatchSpecError(
      "invalid_argument",
      `${path} has ${steps.length} step${steps.length === 1 ? "" : "s"}; --step ${index} is not one of them (steps are counted from 0)`,
    );
  }
  if (step.codingAgent === undefined) {
    throw new BatchSpecError(
      "invalid_argument",
      `steps[${index}] is a run step; render prints codingAgent steps (a run step's script is its "run" text)`,
    );
  }

  // Outputs of earlier steps exist only at run time: a preview shows where they go.
  const outputs: Record<string, TemplateValue> = {};
  for (const earlier of steps.slice(0, index)) {
    for (const name of Object.keys(earlier.outputs ?? {})) outputs[name] = `<outputs.${name}>`;
  }
  const context = createStepTemplateContext({
    repository: { name: repository, branch: (values.branch as string | undefined) ?? "" },
    batchChange: { name: spec.name, description: spec.description ?? "" },
    outputs,
  });
  let prompt: string;
  const stepEnv: Record<string, string> = {};
  try {
    prompt = renderTemplate(step.codingAgent.prompt, context);
    // Names passed through from the runner stay empty: this machine's environment is not the
    // runner's, and its values must not end up in printed output.
    for (const [name, value] of Object.entries(resolveStepEnv(step.env, {}))) {
      stepEnv[name] = renderTemplate(value, context);
    }
  } catch (error) {
    if (error instanceof BatchSpecError) {
      throw new BatchSpecError(
        error.code,
        `steps[${index}]: ${error.message} (a preview has no step results or output values)`,
        { cause: error },
      );
    }
    throw error;
  }

  const definition = defaultAgentRegistry.get(step.codingAgent.type);
  const version = (values["agent-version"] as string | undefined) ?? placeholderVersion;
  const model = (values.model as string | undefined) ?? placeholderModel;
  const rendered = renderCodingAgentStep({
    type: step.codingAgent.type,
    prompt,
    version,
    model,
    platform: { os, arch },
    installSource:
      installSourceName === "npm"
        ? { kind: "npm" }
        : { kind: "release", baseUrl: definition?.defaultReleaseBaseUrl ?? "" },
    modelProviderUrl:
      (values["model-provider-url"] as string | undefined) ??
      env[WireEnv.modelProviderUrl] ??
      `http://localhost${WirePath.modelProvider}`,
    image: step.container ?? "",
    env: stepEnv,
  });
  if (!rendered.ok) throw rendered.error;
  if (version === placeholderVersion || model === placeholderModel) {
    io.stderr.write(
      `note: rendered with placeholders (${[
        version === placeholderVersion ? `version ${placeholderVersion}` : "",
        model === placeholderModel ? `model ${placeholderModel}` : "",
      ]
        .filter(Boolean)
        .join(", ")}); pass --agent-version and --model for a script that runs\n`,
    );
  }
  io.stdout.write(
    rendered.value.redactedScript.endsWith("\n")
      ? rendered.value.redactedScript
      : `${rendered.value.redactedScript}\n`,
  );
  return 0;
}

/**
 * Runs `deckhand batch <argv...>` and returns its exit code: 0 on success, 1 when the spec or
 * the request is wrong, 2 for a usage error. Never throws and never prints a stack trace.
 */
export async function runBatchCommand(
  argv: string[],
  io: BatchCommandIo = { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() },
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "validate":
        return validate(rest, io);
      case "render":
        return render(rest, io, process.env);
      case "schema":
        return schema(rest, io);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        io.stdout.write(batchUsage);
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`deckhand batch: ${error.message}\n\n${usageFor(command)}`);
      return 2;
    }
    const message = errorMessage(error);
    io.stderr.write(`deckhand batch ${command}: ${message}\n`);
    return 1;
  }
}

function usageFor(command: string | undefined): string {
  switch (command) {
    case "validate":
      return validateUsage;
    case "render":
      return renderUsage;
    case "schema":
      return schemaUsage;
    default:
      return batchUsage;
  }
}
