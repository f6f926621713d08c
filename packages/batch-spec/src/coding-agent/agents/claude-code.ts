import { WireEnv, WireHeader } from "@deckhand/wire";
import {
  FILE_BINARIES,
  fileReleasePlan,
  NPM_BINARIES,
  npmPlan,
  STAGING_BINARIES,
} from "../install-steps.ts";
import { ALL_PLATFORMS, type ResolvedPlatform } from "../platform.ts";
import type {
  AgentDownloadContext,
  AgentInstallContext,
  AgentRunContext,
  AgentTypeDefinition,
} from "../types.ts";

/** Platform directories of Claude Code's native builds; Alpine needs the musl ones. */
function claudePlatform(platform: ResolvedPlatform): string {
  const musl = platform.os === "linux" && platform.libc === "musl" ? "-musl" : "";
  return `${platform.os}-${platform.arch}${musl}`;
}

const BINARY = "claude";
const NPM_PACKAGE = "@anthropic-ai/claude-code";

/**
 * Claude Code runs with `-p` (print mode: one prompt, no TTY, exits when done) and
 * `--output-format stream-json` (which print mode only allows with `--verbose`) so its events
 * can be followed like codex's JSON lines. `--dangerously-skip-permissions` because the step's
 * container is the sandbox and nobody is there to approve.
 *
 * Pointing it at the proxy is all environment:
 * - `ANTHROPIC_BASE_URL` = `<model-provider-url>/claude-code`;
 * - `ANTHROPIC_AUTH_TOKEN` from the token variable, which Claude Code sends as
 *   `Authorization: Bearer`, as the proxy expects from every agent (`ANTHROPIC_API_KEY` would
 *   go out as `x-api-key`, so it is unset instead, and no real key from the image can leak);
 * - `ANTHROPIC_CUSTOM_HEADERS` ("Name: value" lines) carrying the job id header;
 * - `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` and `DISABLE_AUTOUPDATER`: no outside lookups,
 *   and no self-update replacing the pinned version;
 * - `IS_SANDBOX=1`: Claude Code refuses `--dangerously-skip-permissions` as root otherwise,
 *   and containers commonly run as root.
 */
export const claudeCodeAgent: AgentTypeDefinition = {
  type: "claude-code",
  displayName: "Claude Code",
  binary: BINARY,
  supportedPlatforms: ALL_PLATFORMS,
  defaultReleaseBaseUrl:
    "https://storage.googleapis.com/claude-code-dist-86c565f3-f756-42ad-8dfa-d59b1c096819/claude-code-releases",
  npmPackage: NPM_PACKAGE,

  requiredBinaries(context: AgentInstallContext) {
    if (context.source.kind === "installed") return [];
    const install = context.source.kind === "npm" ? NPM_BINARIES : FILE_BINARIES;
    return [...install, ...STAGING_BINARIES];
  },

  install(context: AgentDownloadContext) {
    if (context.source.kind === "npm") {
      return npmPlan(NPM_PACKAGE, context.version, BINARY, context.source.registry);
    }
    // Native builds are single executables at <base>/<version>/<platform>/claude.
    const url = `${context.source.baseUrl}/${context.version}/${claudePlatform(context.platform)}/claude`;
    return fileReleasePlan(url, BINARY);
  },

  expectedVersionOutput(version: string) {
    return `${version} (Claude Code)`;
  },

  run(context: AgentRunContext) {
    return {
      unset: ["ANTHROPIC_API_KEY"],
      environment: [
        { name: "ANTHROPIC_BASE_URL", value: [context.baseUrl] },
        { name: "ANTHROPIC_AUTH_TOKEN", value: [{ env: WireEnv.modelProviderToken }] },
        {
          name: "ANTHROPIC_CUSTOM_HEADERS",
          value: [`${WireHeader.jobId}: `, { env: WireEnv.jobId }],
        },
        { name: "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", value: ["1"] },
        { name: "DISABLE_AUTOUPDATER", value: ["1"] },
        { name: "IS_SANDBOX", value: ["1"] },
      ],
      arguments: [
        "-p",
        "--output-format=stream-json",
        "--verbose",
        "--dangerously-skip-permissions",
        `--model=${context.model}`,
        "--",
        context.prompt,
      ],
    };
  },
};
