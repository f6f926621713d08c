import { WireEnv, WireHeader } from "@deckhand/wire";
import {
  NPM_BINARIES,
  npmPlan,
  STAGING_BINARIES,
  TAR_GZ_BINARIES,
  tarGzReleasePlan,
  ZIP_BINARIES,
  zipReleasePlan,
} from "../install-steps.ts";
import { ALL_PLATFORMS, type ResolvedPlatform } from "../platform.ts";
import type { AgentInstallContext, AgentRunContext, AgentTypeDefinition } from "../types.ts";

/** opencode's provider id for the proxy; the model is addressed as `deckhand/<model>`. */
export const OPENCODE_PROVIDER_ID = "deckhand";

function opencodeAsset(platform: ResolvedPlatform): string {
  const musl = platform.os === "linux" && platform.libc === "musl" ? "-musl" : "";
  return `opencode-${platform.os}-${platform.arch}${musl}`;
}

/**
 * The inline config (`OPENCODE_CONFIG_CONTENT`, which opencode applies over every config
 * file) defining the proxy as an OpenAI-compatible provider. The token and job id are written
 * as `{env:NAME}` references that opencode substitutes when it loads the config, so the values
 * never appear in the script; `@ai-sdk/openai-compatible` sends `apiKey` as a bearer token.
 * Tools are allowed without asking: the container is the sandbox and nobody is there to
 * approve. Autoupdate and sharing are off: no outside lookups, no replacing the pinned version.
 */
export function opencodeConfig(context: AgentRunContext): string {
  return JSON.stringify({
    autoupdate: false,
    share: "disabled",
    model: `${OPENCODE_PROVIDER_ID}/${context.model}`,
    permission: { edit: "allow", bash: "allow", webfetch: "allow" },
    provider: {
      [OPENCODE_PROVIDER_ID]: {
        npm: "@ai-sdk/openai-compatible",
        name: "Deckhand model provider",
        options: {
          baseURL: context.baseUrl,
          apiKey: `{env:${WireEnv.modelProviderToken}}`,
          headers: { [WireHeader.jobId]: `{env:${WireEnv.jobId}}` },
        },
        models: { [context.model]: { name: context.model } },
      },
    },
  });
}

const BINARY = "opencode";
const NPM_PACKAGE = "opencode-ai";

/**
 * `opencode run` is the non-interactive mode: one message, then exit; `--format json` prints
 * its events as JSON lines. `--` ends the options so a prompt starting with `-` stays the
 * message.
 */
export const opencodeAgent: AgentTypeDefinition = {
  type: "opencode",
  displayName: "OpenCode",
  binary: BINARY,
  supportedPlatforms: ALL_PLATFORMS,
  defaultReleaseBaseUrl: "https://github.com/sst/opencode/releases/download",
  npmPackage: NPM_PACKAGE,

  requiredBinaries(context: AgentInstallContext) {
    if (context.source.kind === "npm") return [...NPM_BINARIES, ...STAGING_BINARIES];
    // Linux assets are .tar.gz, macOS ones .zip.
    const install = context.platform.os === "darwin" ? ZIP_BINARIES : TAR_GZ_BINARIES;
    return [...install, ...STAGING_BINARIES];
  },

  install(context: AgentInstallContext) {
    if (context.source.kind === "npm") {
      return npmPlan(NPM_PACKAGE, context.version, BINARY, context.source.registry);
    }
    const asset = opencodeAsset(context.platform);
    const base = `${context.source.baseUrl}/v${context.version}/${asset}`;
    return context.platform.os === "darwin"
      ? zipReleasePlan(`${base}.zip`, BINARY, ["opencode"])
      : tarGzReleasePlan(`${base}.tar.gz`, BINARY, ["opencode"]);
  },

  expectedVersionOutput(version: string) {
    return version;
  },

  run(context: AgentRunContext) {
    return {
      unset: [],
      environment: [
        { name: "OPENCODE_CONFIG_CONTENT", value: [opencodeConfig(context)] },
        { name: "OPENCODE_DISABLE_AUTOUPDATE", value: ["1"] },
      ],
      arguments: [
        "run",
        `--model=${OPENCODE_PROVIDER_ID}/${context.model}`,
        "--format=json",
        "--",
        context.prompt,
      ],
    };
  },
};
