// Gemini CLI's `write_file` over ACP, as the released CLI (0.61) does it, for the scripted agent's
// `write-as-gemini` directive. Before writing, the tool reads the file to tell a new file from a
// changed one: through the client's `fs/read_text_file` when the client advertised it, else from
// disk itself. A failed ACP read counts as "no such file" only when its error says so, and the
// ACP SDK the CLI bundles rejects a request with the bare JSON-RPC error object, not an Error:
// Gemini's check (`err instanceof Error ? err.message : String(err)`) then reads
// "[object Object]", so every error, -32002 for a missing file included, fails the tool.
import { readFileSync } from "node:fs";
import * as acp from "@agentclientprotocol/sdk";

/** What the tool read before writing. */
export type GeminiRead = { exists: true; content: string } | { exists: false } | { failed: string };

/** The rejection value Gemini's bundled SDK hands the tool: the JSON-RPC error object. */
function bundledSdkRejection(error: unknown): unknown {
  if (error instanceof acp.RequestError) {
    return {
      code: error.code,
      message: error.message,
      ...(error.data === undefined ? {} : { data: error.data }),
    };
  }
  return error;
}

/** AcpFileSystemService.normalizeFileSystemError: which failures count as a missing file. */
function isMissingFile(rejection: unknown): boolean {
  const message = rejection instanceof Error ? rejection.message : String(rejection);
  return ["Resource not found", "ENOENT", "does not exist", "No such file"].some((marker) =>
    message.includes(marker),
  );
}

/** getErrorMessage of gemini-cli-core, for the tool's failure. */
function errorText(rejection: unknown): string {
  return rejection instanceof Error ? rejection.message : String(rejection);
}

/** How Gemini's write_file reads `path` before it writes it. */
export async function readAsGemini(
  client: acp.AgentContext,
  sessionId: string,
  capabilities: acp.ClientCapabilities,
  path: string,
): Promise<GeminiRead> {
  if (capabilities.fs?.readTextFile !== true) {
    // The client serves no reads: Gemini reads the file from disk itself.
    try {
      return { exists: true, content: readFileSync(path, "utf8") };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return { exists: false };
      return { failed: errorText(error) };
    }
  }
  try {
    const answer = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path });
    return { exists: true, content: answer.content };
  } catch (error) {
    const rejection = bundledSdkRejection(error);
    return isMissingFile(rejection) ? { exists: false } : { failed: errorText(rejection) };
  }
}
