// Rules that depend on more than one field: the version, run vs codingAgent, images, mounts,
// `on` entries, publish rules. They read the spec as parsed from YAML (not yet known to be
// well-typed) so that they can report alongside structural problems, all in one pass.
import { branchNameProblem } from "@deckhand/wire";
import type { AcpProviderCatalogue, AgentTypeCatalogue } from "./agent-types.ts";
import { ACP_AGENT_TYPE } from "./batch-spec-schema.ts";
import type { BatchSpecDiagnostic, FieldPath } from "./diagnostics.ts";
import { compileGlob } from "./glob.ts";
import type { SpecSource } from "./spec-source.ts";
import { closestMatch } from "./suggest.ts";

type Data = Record<string, unknown>;

function isRecord(value: unknown): value is Data {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function has(record: Data, key: string): boolean {
  return Object.hasOwn(record, key) && record[key] !== undefined;
}

/**
 * Docker and Podman read `--mount` options as comma-separated CSV, so these characters in a
 * path would end the path and start another option (src-cli #1284).
 */
const mountBreakingCharacters = [",", '"', "\n", "\r"] as const;

function describeCharacter(character: string): string {
  switch (character) {
    case "\n":
      return "a newline";
    case "\r":
      return "a carriage return";
    case '"':
      return 'a double quote (")';
    default:
      return `a comma (",")`;
  }
}

function mountBreakingCharacter(text: string): string | undefined {
  return mountBreakingCharacters.find((character) => text.includes(character));
}

export interface RuleOptions {
  agentTypes: AgentTypeCatalogue;
  /** The providers `acp` steps may name; without it, any provider name is accepted. */
  acpProviders?: AcpProviderCatalogue;
}

class RuleChecker {
  readonly diagnostics: BatchSpecDiagnostic[] = [];
  private readonly source: SpecSource;
  private readonly options: RuleOptions;

  constructor(source: SpecSource, options: RuleOptions) {
    this.source = source;
    this.options = options;
  }

  private add(
    path: FieldPath,
    code: BatchSpecDiagnostic["code"],
    message: string,
    target: "key" | "value" = "key",
  ): void {
    this.diagnostics.push(this.source.diagnostic(path, code, message, target));
  }

  check(spec: Data): void {
    const rawVersion = spec.version;
    const version =
      rawVersion === undefined
        ? 1
        : rawVersion === 1 || rawVersion === 2 || rawVersion === 3
          ? rawVersion
          : undefined;

    if (Array.isArray(spec.on)) {
      for (const [index, entry] of spec.on.entries()) this.onEntry(entry, ["on", index]);
    }

    if (Array.isArray(spec.workspaces)) {
      spec.workspaces.forEach((workspace, index) => {
        if (isRecord(workspace) && typeof workspace.in === "string") {
          this.glob(workspace.in, ["workspaces", index, "in"]);
        }
      });
    }

    const steps = spec.steps;
    if (Array.isArray(steps)) {
      for (const [index, step] of steps.entries()) this.step(step, ["steps", index], version);
      if (steps.length > 0 && !has(spec, "changesetTemplate")) {
        this.add(
          ["steps"],
          "steps_without_changeset_template",
          "the spec has steps but no changesetTemplate; add a changesetTemplate (title, branch and commit.message) so the changes become changesets",
        );
      }
    }

    const hooks = spec.changesetHooks;
    if (has(spec, "changesetHooks")) {
      if (version !== 3) {
        this.add(
          ["changesetHooks"],
          "changeset_hooks_require_version_3",
          `changesetHooks need version 3; add "version: 3" at the top of the spec`,
        );
      }
      if (isRecord(hooks)) {
        for (const event of ["onCIFailure", "onMergeConflict"]) {
          const hook = hooks[event];
          if (isRecord(hook) && Array.isArray(hook.steps)) {
            for (const [index, step] of hook.steps.entries()) {
              this.step(step, ["changesetHooks", event, "steps", index], 3);
            }
          }
        }
      }
    }

    const template = spec.changesetTemplate;
    if (isRecord(template) && Array.isArray(template.published)) {
      for (const [index, rule] of template.published.entries()) {
        this.publishRule(rule, ["changesetTemplate", "published", index]);
      }
    }
  }

  private glob(pattern: string, path: FieldPath, target: "key" | "value" = "value"): void {
    try {
      compileGlob(pattern);
    } catch (error) {
      this.add(path, "invalid_glob", (error as Error).message, target);
    }
  }

  private onEntry(entry: unknown, path: FieldPath): void {
    if (!isRecord(entry)) return;
    const query = has(entry, "repositoriesMatchingQuery");
    const repository = has(entry, "repository");
    if (query && repository) {
      this.add(
        path,
        "on_query_and_repository",
        `an "on" entry has either "repositoriesMatchingQuery" or "repository", not both; split it into two entries`,
      );
    } else if (!query && !repository) {
      this.add(
        path,
        "on_missing_target",
        `an "on" entry needs "repositoriesMatchingQuery" (a search query) or "repository" (a repository name)`,
      );
    }
    if (has(entry, "branch") && has(entry, "branches")) {
      this.add(
        [...path, "branches"],
        "on_branch_and_branches",
        `set either "branch" or "branches", not both`,
      );
    }
    if (query && !repository) {
      for (const field of ["branch", "branches"]) {
        if (has(entry, field)) {
          this.add(
            [...path, field],
            "on_branch_without_repository",
            `"${field}" belongs to a "repository" entry; a repositoriesMatchingQuery entry selects branches through its query`,
          );
        }
      }
    }
  }

  /** `provider` and `permissions` belong to `type: acp`, which needs a provider Deckhand has. */
  private acpFields(agent: Data, path: FieldPath): void {
    if (agent.type !== ACP_AGENT_TYPE) {
      for (const field of ["provider", "permissions"]) {
        if (has(agent, field)) {
          this.add(
            [...path, field],
            "acp_field_without_acp_type",
            `"${field}" belongs to a codingAgent of type acp (a Deckhand provider run over ACP); set type: acp, or remove "${field}"`,
          );
        }
      }
      return;
    }
    if (!has(agent, "provider")) {
      this.add(
        path,
        "acp_step_missing_provider",
        `missing "provider": an acp codingAgent step names the Deckhand provider to run, e.g. provider: opencode`,
      );
      return;
    }
    const provider = agent.provider;
    const catalogue = this.options.acpProviders;
    if (typeof provider !== "string" || catalogue === undefined || catalogue.has(provider)) return;
    const known = catalogue.ids();
    const refusal = catalogue.refusal?.(provider);
    const suggestion = closestMatch(provider, known);
    const hint =
      refusal ??
      `${suggestion === undefined ? "" : `did you mean "${suggestion}"? `}ACP providers: ${known.join(", ") || "none"}`;
    this.add(
      [...path, "provider"],
      "unknown_acp_provider",
      `unknown provider "${provider}"; ${hint}`,
      "value",
    );
  }

  private publishRule(rule: unknown, path: FieldPath): void {
    if (!isRecord(rule)) return;
    const keys = Object.keys(rule);
    if (keys.length !== 1) {
      this.add(
        path,
        "invalid_value",
        `a publish rule is a map with exactly one pattern ({"<repository glob>[@<branch>]": true | false | "draft"}); got ${keys.length} patterns, so give each its own list entry`,
      );
    }
    for (const key of keys) {
      const at = key.indexOf("@");
      this.glob(at < 0 ? key : key.slice(0, at), [...path, key], "key");
      const branch = at < 0 ? "" : key.slice(at + 1);
      const problem = branch === "" ? null : branchNameProblem(branch);
      if (problem !== null) {
        // src-cli compares the part after "@" with the branch exactly, so a glob there (or any
        // other name git refuses) can never match a changeset.
        this.add(
          [...path, key],
          "invalid_value",
          `the branch after "@" is compared exactly with each changeset's branch, and "${branch}" is not a branch name (${problem}), so this rule never matches; name one branch per rule`,
          "key",
        );
      }
    }
  }

  private step(step: unknown, path: FieldPath, version: 1 | 2 | 3 | undefined): void {
    if (!isRecord(step)) return;
    const hasRun = has(step, "run");
    const hasAgent = has(step, "codingAgent");
    const acpAgent =
      hasAgent && isRecord(step.codingAgent) && step.codingAgent.type === ACP_AGENT_TYPE;
    const hasImage = has(step, "image");
    const hasContainer = has(step, "container");

    if (hasImage && hasContainer) {
      this.add(
        [...path, "image"],
        "image_and_container",
        `"image" and "container" name the same thing; keep one of them`,
      );
    }
    if (hasRun && hasAgent) {
      this.add(
        [...path, "codingAgent"],
        "step_run_and_coding_agent",
        `a step has either "run" or "codingAgent", not both; move the shell command into a step of its own`,
      );
    }
    if (version === 1 || version === 2) {
      if (hasAgent) {
        this.add(
          [...path, "codingAgent"],
          "coding_agent_requires_version_3",
          `codingAgent steps need version 3; add "version: 3" at the top of the spec and give the step an "image"`,
        );
      }
      if (hasImage) {
        this.add(
          [...path, "image"],
          "image_requires_version_3",
          `"image" is the version 3 spelling; write "container" in a version ${version} spec, or set "version: 3"`,
        );
      }
      if (!hasRun && !hasAgent) {
        this.add(
          path,
          "step_missing_run",
          `missing "run": a version ${version} step runs a shell command; add run: <command>`,
        );
      }
      if (!hasImage && !hasContainer) {
        this.add(
          path,
          "step_missing_container",
          `missing "container": a step runs in a container image; add container: <image>`,
        );
      }
    } else if (version === 3) {
      if (!hasRun && !hasAgent) {
        this.add(
          path,
          "step_missing_command",
          `a step needs "run" (a shell command) or "codingAgent" (an agent and a prompt); add one of them`,
        );
      }
      if (acpAgent) {
        // Runs on the executor's machine in the workspace, not in an image.
        for (const field of ["image", "container"] as const) {
          if (has(step, field)) {
            this.add(
              [...path, field],
              "acp_step_image",
              `an acp codingAgent step runs the provider's agent on the executor's machine, sandboxed to the workspace, not in a container image; remove "${field}"`,
            );
          }
        }
      } else if (!hasImage && !hasContainer) {
        this.add(
          path,
          "step_missing_image",
          hasAgent
            ? `missing "image": a codingAgent step runs the agent in a container image that has the tools it needs (curl, tar); add image: <image>`
            : `missing "image": a step runs in a container image; add image: <image>`,
        );
      }
    }

    for (const field of ["image", "container"] as const) {
      const reference = step[field];
      if (typeof reference === "string" && reference.startsWith("-")) {
        this.add(
          [...path, field],
          "invalid_image",
          `image reference ${JSON.stringify(reference)} starts with "-", so the container runtime would read it as an option; no image name starts with "-": name an image such as alpine:3`,
          "value",
        );
      }
    }

    const agent = step.codingAgent;
    if (isRecord(agent)) this.acpFields(agent, [...path, "codingAgent"]);
    if (
      isRecord(agent) &&
      typeof agent.type === "string" &&
      agent.type !== ACP_AGENT_TYPE &&
      !this.options.agentTypes.has(agent.type)
    ) {
      const known = [...this.options.agentTypes.types(), ACP_AGENT_TYPE];
      const suggestion = closestMatch(agent.type, known);
      const hint =
        suggestion === undefined ? "; known types" : `; did you mean "${suggestion}"? Known types`;
      this.add(
        [...path, "codingAgent", "type"],
        "unknown_agent_type",
        `unknown coding agent type "${agent.type}"${hint}: ${known.join(", ")}`,
        "value",
      );
    }

    if (Array.isArray(step.mount)) {
      step.mount.forEach((mount, index) => {
        if (!isRecord(mount)) return;
        for (const field of ["path", "mountpoint"] as const) {
          const value = mount[field];
          const character = typeof value === "string" ? mountBreakingCharacter(value) : undefined;
          if (character !== undefined) {
            this.add(
              [...path, "mount", index, field],
              "invalid_path_character",
              `mount ${field} must not contain ${describeCharacter(character)}: the container runtime reads --mount options as comma-separated values, so it would inject extra mount arguments; rename the file or choose another ${field}`,
              "value",
            );
          }
        }
      });
    }

    if (isRecord(step.files)) {
      for (const name of Object.keys(step.files)) {
        const character = mountBreakingCharacter(name);
        if (character !== undefined) {
          this.add(
            [...path, "files", name],
            "invalid_path_character",
            `file path must not contain ${describeCharacter(character)}: files are mounted with --mount, whose options are comma-separated values, so it would inject extra mount arguments; choose another path`,
          );
        }
      }
    }

    if (Array.isArray(step.env)) {
      step.env.forEach((entry, index) => {
        if (isRecord(entry) && Object.keys(entry).length !== 1) {
          this.add(
            [...path, "env", index],
            "invalid_value",
            `an env list entry is a variable name or a map with exactly one variable ({NAME: value}); got ${Object.keys(entry).length} variables, so give each its own list entry`,
          );
        }
      });
    }
  }
}

/** Checks the cross-field rules on a spec as parsed from YAML or JSON. */
export function checkSpecRules(
  spec: Data,
  source: SpecSource,
  options: RuleOptions,
): BatchSpecDiagnostic[] {
  const checker = new RuleChecker(source, options);
  checker.check(spec);
  return checker.diagnostics;
}
