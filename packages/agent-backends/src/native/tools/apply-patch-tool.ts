import { z } from "zod";
import { AgentBackendError } from "../../errors.ts";
import { type ApplyPatchResult, applyPatch } from "../apply-patch/apply-patch.ts";
import { defineTool } from "./define-tool.ts";

export const ApplyPatchArgsSchema = z.object({
  patch: z
    .string()
    .describe(
      "The whole patch, from '*** Begin Patch' to '*** End Patch', in the format described.",
    ),
});

export const APPLY_PATCH_DESCRIPTION = `Edit files with a patch. Either every change applies or no file changes. Format:

*** Begin Patch
*** Add File: <path>          (then the new file's lines, each prefixed with +)
*** Delete File: <path>
*** Update File: <path>
*** Move to: <new path>       (optional, renames the updated file)
@@ <a line near the change, to find the place>   (or just @@)
 unchanged context line (prefixed with a space)
-removed line
+added line
*** End of File               (optional, when the hunk ends at the end of the file)
*** End Patch

Paths are relative to the worktree. Give about 3 lines of context above and below each change, copied exactly from the file.`;

export const applyPatchTool = defineTool({
  name: "apply_patch",
  description: APPLY_PATCH_DESCRIPTION,
  schema: ApplyPatchArgsSchema,
  async execute(args, context): Promise<ApplyPatchResult> {
    if (context.signal.aborted) throw new AgentBackendError("aborted", "the patch was interrupted");
    return applyPatch(args.patch, {
      files: context.files,
      worktreeRoot: context.worktreeRoot,
      signal: context.signal,
    });
  },
});
