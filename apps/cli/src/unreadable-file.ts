import { errnoCode, errorMessage } from "@deckhand/errors";

/** Why a file could not be read, in words a person acts on: "no such file", "it is a directory". */
export function unreadableFileReason(error: unknown): string {
  const code = errnoCode(error);
  if (code === "ENOENT") return "no such file";
  if (code === "EISDIR") return "it is a directory";
  return errorMessage(error) ?? String(error);
}
