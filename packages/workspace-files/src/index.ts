export type { RenameFile } from "./atomic-write.ts";
export { FileClient, FileClientError, type FileClientOptions } from "./file-client.ts";
export { createFileRouter } from "./file-router.ts";
export { isPathInsideRoot, resolveWorkspacePath } from "./path-guard.ts";
export {
  type PlacedEntry,
  type PlaceNewEntryOptions,
  placeNewEntry,
} from "./place-new-entry.ts";
export { WorkspaceFiles, type WorkspaceFilesOptions } from "./workspace-files.ts";
export { WorkspaceFilesError } from "./workspace-files-error.ts";
