import packageJson from "../package.json" with { type: "json" };

/** Whether a command line's first word asks for the version: `deckhand version` or `--version`. */
export function isVersionCommand(command: string | undefined): boolean {
  return command === "version" || command === "--version";
}

/** What `deckhand version` prints. */
export const versionLine = `${packageJson.version}\n`;
