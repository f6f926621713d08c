import { WireEnv, WireHeader } from "@deckhand/wire";
import {
  NPM_BINARIES,
  npmPlan,
  STAGING_BINARIES,
  TAR_GZ_BINARIES,
  tarGzReleasePlan,
} from "../install-steps.ts";
import { ALL_PLATFORMS, type ResolvedPlatform } from "../platform.ts";
import type {
  AgentDownloadContext,
  AgentInstallContext,
  AgentRunContext,
  AgentTypeDefinition,
} from "../types.ts";
import { tomlString } from "./toml.ts";

/** The custom provider's id in codex's config; any id but the built-in `openai` will do. */
export const CODEX_PROVIDER_ID = "deckhand";

/** Rust target triples of codex's release assets. Linux builds are static musl binaries. */
function codexTarget(platform: ResolvedPlatform): string {
  const cpu = platform.arch === "x64" ? "x86_64" : "aarch64";
  return platform.os === "linux" ? `${cpu}-unknown-linux-musl` : `${cpu}-apple-darwin`;
}

/**
 * The arguments of `codex exec`, as checked against codex 0.169:
 * - `--json`: JSON lines on stdout, one event each, for Deckhand to follow the run;
 * - `--skip-git-repo-check --ephemeral`: the workspace may not be a repository, and no session
 *   is kept for resuming;
 * - `--dangerously-bypass-approvals-and-sandbox`: the step's container is the sandbox, and
 *   codex's own (bwrap) fails under Docker's default seccomp profile;
 * - `-c analytics.enabled=false --disable plugins`: otherwise codex looks up outside hosts;
 * - a custom provider (`model_provider` + `model_providers.<id>.*`), because the built-in
 *   `openai` one tries WebSockets first; it sends the token from `env_key` as a bearer token
 *   and the job id header from `env_http_headers`, both read from the environment by codex, so
 *   neither value is ever in the command line;
 * - `-c model=…`: must be a model in codex's bundled catalog, or codex offers no tools;
 * - `--` before the prompt, so a prompt starting with `-` is not taken for an option.
 */
export function codexArguments(context: AgentRunContext): string[] {
  const provider = `model_providers.${CODEX_PROVIDER_ID}`;
  return [
    "exec",
    "--json",
    "--skip-git-repo-check",
    "--ephemeral",
    "--dangerously-bypass-approvals-and-sandbox",
    "-c",
    "analytics.enabled=false",
    "--disable",
    "plugins",
    "-c",
    `model_provider=${tomlString(CODEX_PROVIDER_ID)}`,
    "-c",
    `${provider}.name=${tomlString("Deckhand model provider")}`,
    "-c",
    `${provider}.base_url=${tomlString(context.baseUrl)}`,
    "-c",
    `${provider}.env_key=${tomlString(WireEnv.modelProviderToken)}`,
    "-c",
    `${provider}.env_http_headers={${tomlString(WireHeader.jobId)}=${tomlString(WireEnv.jobId)}}`,
    "-c",
    `model=${tomlString(context.model)}`,
    "--",
    context.prompt,
  ];
}

const BINARY = "codex";
const NPM_PACKAGE = "@openai/codex";

export const codexAgent: AgentTypeDefinition = {
  type: "codex",
  displayName: "Codex CLI",
  binary: BINARY,
  supportedPlatforms: ALL_PLATFORMS,
  defaultReleaseBaseUrl: "https://github.com/openai/codex/releases/download",
  npmPackage: NPM_PACKAGE,

  requiredBinaries(context: AgentInstallContext) {
    if (context.source.kind === "installed") return [];
    // The release binary is static; the npm package starts it through a node launcher.
    const install = context.source.kind === "npm" ? NPM_BINARIES : TAR_GZ_BINARIES;
    return [...install, ...STAGING_BINARIES];
  },

  install(context: AgentDownloadContext) {
    if (context.source.kind === "npm") {
      return npmPlan(NPM_PACKAGE, context.version, BINARY, context.source.registry);
    }
    const target = codexTarget(context.platform);
    const url = `${context.source.baseUrl}/rust-v${context.version}/codex-${target}.tar.gz`;
    // Release archives hold `codex-<target>`; a mirror that repacks them may name it `codex`.
    return tarGzReleasePlan(url, BINARY, [`codex-${target}`, "codex"]);
  },

  expectedVersionOutput(version: string) {
    return `codex-cli ${version}`;
  },

  run(context: AgentRunContext) {
    return { unset: [], environment: [], arguments: codexArguments(context) };
  },
};
