import { WireEnv, WireHeader } from "@deckhand/wire";
import {
  FILE_BINARIES,
  fileReleasePlan,
  NPM_BINARIES,
  npmPlan,
  STAGING_BINARIES,
} from "../install-steps.ts";
import { ALL_PLATFORMS } from "../platform.ts";
import type { AgentInstallContext, AgentRunContext, AgentTypeDefinition } from "../types.ts";

const BINARY = "gemini";
const NPM_PACKAGE = "@google/gemini-cli";

/**
 * Gemini CLI is a Node program on every platform: its release asset is one bundled
 * `gemini.js` with a `node` shebang, installed as the executable; npm installs the same.
 *
 * It runs headless with `--prompt=…` (the `=` form, so a prompt starting with `-` stays the
 * prompt), `--yolo` (tools run without approval; the container is the sandbox) and
 * `--output-format=stream-json` (JSON lines, like the other agents).
 *
 * Pointing it at the proxy:
 * - `GOOGLE_GEMINI_BASE_URL` = `<model-provider-url>/gemini`;
 * - `GEMINI_API_KEY` from the token variable (sent as `x-goog-api-key`), with
 *   `GEMINI_DEFAULT_AUTH_TYPE=gemini-api-key` so no login is attempted;
 * - `GEMINI_CLI_CUSTOM_HEADERS` ("Name: value" pairs separated by commas) carrying the job id
 *   header and the token again as `Authorization: Bearer`, the form the proxy expects from
 *   every agent type;
 * - `GOOGLE_API_KEY` and `GOOGLE_GENAI_USE_VERTEXAI` are unset, so credentials in the image
 *   cannot take precedence or leave the machine.
 */
export const geminiAgent: AgentTypeDefinition = {
  type: "gemini",
  displayName: "Gemini CLI",
  binary: BINARY,
  supportedPlatforms: ALL_PLATFORMS,
  defaultReleaseBaseUrl: "https://github.com/google-gemini/gemini-cli/releases/download",
  npmPackage: NPM_PACKAGE,

  requiredBinaries(context: AgentInstallContext) {
    const install = context.source.kind === "npm" ? NPM_BINARIES : [...FILE_BINARIES, "node"];
    return [...install, ...STAGING_BINARIES];
  },

  install(context: AgentInstallContext) {
    if (context.source.kind === "npm") {
      return npmPlan(NPM_PACKAGE, context.version, BINARY, context.source.registry);
    }
    const url = `${context.source.baseUrl}/v${context.version}/gemini.js`;
    return fileReleasePlan(url, BINARY);
  },

  expectedVersionOutput(version: string) {
    return version;
  },

  run(context: AgentRunContext) {
    return {
      unset: ["GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"],
      environment: [
        { name: "GOOGLE_GEMINI_BASE_URL", value: [context.baseUrl] },
        { name: "GEMINI_API_KEY", value: [{ env: WireEnv.modelProviderToken }] },
        { name: "GEMINI_DEFAULT_AUTH_TYPE", value: ["gemini-api-key"] },
        {
          name: "GEMINI_CLI_CUSTOM_HEADERS",
          value: [
            `${WireHeader.jobId}: `,
            { env: WireEnv.jobId },
            `, ${WireHeader.authorization}: Bearer `,
            { env: WireEnv.modelProviderToken },
          ],
        },
      ],
      arguments: [
        `--model=${context.model}`,
        "--yolo",
        "--output-format=stream-json",
        `--prompt=${context.prompt}`,
      ],
    };
  },
};
