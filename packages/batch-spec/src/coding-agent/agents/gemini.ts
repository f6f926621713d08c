import { WireEnv, WireHeader } from "@deckhand/wire";
import {
  NPM_BINARIES,
  npmPlan,
  STAGING_BINARIES,
  ZIP_BINARIES,
  zipReleasePlan,
} from "../install-steps.ts";
import { ALL_PLATFORMS } from "../platform.ts";
import {
  AGENT_STATE_DIRECTORY,
  type AgentDownloadContext,
  type AgentInstallContext,
  type AgentRunContext,
  type AgentTypeDefinition,
} from "../types.ts";

const BINARY = "gemini";
const NPM_PACKAGE = "@google/gemini-cli";
/** The release asset: the whole `bundle/` directory, zipped (the entry and its chunks). */
const RELEASE_ASSET = "gemini-cli-bundle.zip";
const ENTRY = "gemini.js";

/**
 * The user settings Gemini CLI reads from `$GEMINI_CLI_HOME/.gemini/settings.json`:
 * - `security.auth.selectedType: "gemini-api-key"`: without it, `GOOGLE_GEMINI_BASE_URL`
 *   selects the `gateway` auth type, which headless mode refuses since 0.44 ("Invalid auth
 *   method selected.", exit 41); with it, the key is `GEMINI_API_KEY` and the base URL still
 *   comes from `GOOGLE_GEMINI_BASE_URL`;
 * - `privacy.usageStatisticsEnabled: false`: no usage statistics sent to Google, and no
 *   installation id added to model requests;
 * - `general.enableAutoUpdate` and `…Notification` off: no update check, no replacing the
 *   pinned version.
 * User settings rather than system settings: Gemini CLI skips a system settings file whose
 * directories others can write to, as `/tmp` is.
 */
export const GEMINI_SETTINGS = {
  security: { auth: { selectedType: "gemini-api-key" } },
  privacy: { usageStatisticsEnabled: false },
  general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
} as const;

/**
 * Gemini CLI is a Node program on every platform, code-split since 0.35: `gemini.js` imports
 * the `chunk-*.js` files beside it. Its GitHub release carries the whole bundle as
 * `gemini-cli-bundle.zip`; npm installs the same bundle with the package.
 *
 * It runs headless with `--prompt=…` (the `=` form, so a prompt starting with `-` stays the
 * prompt), `--yolo` (tools run without approval; the container is the sandbox),
 * `--output-format=stream-json` (JSON lines, like the other agents) and `--skip-trust` (an
 * untrusted folder, as a fresh checkout is, stops headless mode since 0.41 with exit 55).
 *
 * Pointing it at the proxy:
 * - `GEMINI_CLI_HOME` = the step's state directory, holding the settings above and whatever
 *   Gemini CLI keeps (history, installation id), apart from every other job's;
 * - `GOOGLE_GEMINI_BASE_URL` = `<model-provider-url>/gemini`, the base of its
 *   `/v1beta/models/<model>:streamGenerateContent` requests;
 * - `GEMINI_API_KEY` from the token variable, which it sends as `x-goog-api-key`;
 * - `GEMINI_CLI_CUSTOM_HEADERS` ("Name: value") carrying the job id header;
 * - Google credentials and auth switches in the image are unset, so none can take precedence
 *   or leave the machine.
 */
export const geminiAgent: AgentTypeDefinition = {
  type: "gemini",
  displayName: "Gemini CLI",
  binary: BINARY,
  supportedPlatforms: ALL_PLATFORMS,
  defaultReleaseBaseUrl: "https://github.com/google-gemini/gemini-cli/releases/download",
  npmPackage: NPM_PACKAGE,

  requiredBinaries(context: AgentInstallContext) {
    if (context.source.kind === "installed") return ["node"];
    const install = context.source.kind === "npm" ? NPM_BINARIES : [...ZIP_BINARIES, "node"];
    return [...install, ...STAGING_BINARIES];
  },

  install(context: AgentDownloadContext) {
    if (context.source.kind === "npm") {
      return npmPlan(NPM_PACKAGE, context.version, BINARY, context.source.registry);
    }
    const url = `${context.source.baseUrl}/v${context.version}/${RELEASE_ASSET}`;
    return zipReleasePlan(url, ENTRY, [ENTRY]);
  },

  expectedVersionOutput(version: string) {
    return version;
  },

  run(context: AgentRunContext) {
    return {
      unset: [
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_GENAI_USE_GCA",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GEMINI_DEFAULT_AUTH_TYPE",
      ],
      environment: [
        { name: "GEMINI_CLI_HOME", value: [AGENT_STATE_DIRECTORY] },
        { name: "GOOGLE_GEMINI_BASE_URL", value: [context.baseUrl] },
        { name: "GEMINI_API_KEY", value: [{ env: WireEnv.modelProviderToken }] },
        {
          name: "GEMINI_CLI_CUSTOM_HEADERS",
          value: [`${WireHeader.jobId}: `, { env: WireEnv.jobId }],
        },
      ],
      stateFiles: [{ path: ".gemini/settings.json", content: JSON.stringify(GEMINI_SETTINGS) }],
      arguments: [
        "--skip-trust",
        `--model=${context.model}`,
        "--yolo",
        "--output-format=stream-json",
        `--prompt=${context.prompt}`,
      ],
    };
  },
};
