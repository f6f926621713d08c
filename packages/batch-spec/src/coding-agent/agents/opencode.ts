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
import {
  AGENT_STATE_DIRECTORY,
  type AgentDownloadContext,
  type AgentInstallContext,
  type AgentRunContext,
  type AgentTypeDefinition,
} from "../types.ts";

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
 * opencode keeps its state (the SQLite database, logs, snapshots, caches) under the XDG base
 * directories, `$HOME/.local/share/opencode` and friends by default: two jobs' runs sharing
 * them race on the database (`CREATE TABLE workspace` failing). Each job's run gets its own,
 * inside the step's state directory.
 */
const XDG_DIRECTORIES = [
  ["XDG_DATA_HOME", "data"],
  ["XDG_STATE_HOME", "state"],
  ["XDG_CONFIG_HOME", "config"],
  ["XDG_CACHE_HOME", "cache"],
] as const;

/**
 * What keeps opencode from reaching hosts other than the proxy, as named in opencode 1.18's
 * flags: the models.dev catalogue fetch, the default plugins it installs from npm, the
 * self-update, session sharing and language-server downloads.
 */
const OFFLINE_FLAGS = [
  "OPENCODE_DISABLE_MODELS_FETCH",
  "OPENCODE_DISABLE_DEFAULT_PLUGINS",
  "OPENCODE_DISABLE_AUTOUPDATE",
  "OPENCODE_DISABLE_SHARE",
  "OPENCODE_DISABLE_LSP_DOWNLOAD",
] as const;

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
    if (context.source.kind === "installed") return [];
    if (context.source.kind === "npm") return [...NPM_BINARIES, ...STAGING_BINARIES];
    // Linux assets are .tar.gz, macOS ones .zip.
    const install = context.platform.os === "darwin" ? ZIP_BINARIES : TAR_GZ_BINARIES;
    return [...install, ...STAGING_BINARIES];
  },

  install(context: AgentDownloadContext) {
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
        ...XDG_DIRECTORIES.map(([name, directory]) => ({
          name,
          value: [AGENT_STATE_DIRECTORY, `/${directory}`],
        })),
        ...OFFLINE_FLAGS.map((name) => ({ name, value: ["1"] })),
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
