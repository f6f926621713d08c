// The code hosts Deckhand finds repositories on. The server embeds `CodeHostsSchema` as
// `codeHosts` in `<data-dir>/config.json`; the CLI adds directory hosts per call.
import { z } from "zod";

export const DirectoryCodeHostSchema = z
  .strictObject({
    type: z.literal("directory"),
    path: z.string().min(1).meta({
      description:
        "A directory scanned (recursively) for git repositories; a repository's name is its path below it, e.g. github.com/acme/api.",
    }),
  })
  .meta({ description: "Repositories already on this machine, found under one directory." });

export const GitUrlCodeHostSchema = z
  .strictObject({
    type: z.literal("git"),
    url: z.string().min(1).meta({
      description:
        "A repository's clone URL (https://, ssh://, git@host:path or file://). It is cloned into the cache on first use and fetched before each run.",
    }),
    name: z.string().min(1).optional().meta({
      description: "The repository's name in batch specs; by default host/path of the URL.",
    }),
  })
  .meta({ description: "One repository cloned on demand from a git URL." });

export const CodeHostSchema = z
  .discriminatedUnion("type", [DirectoryCodeHostSchema, GitUrlCodeHostSchema])
  .meta({ description: "Where batch changes find repositories." });

export const CodeHostsSchema = z
  .array(CodeHostSchema)
  .meta({ description: "The code hosts batch specs' `on:` entries are matched against." });

export type DirectoryCodeHost = z.infer<typeof DirectoryCodeHostSchema>;
export type GitUrlCodeHost = z.infer<typeof GitUrlCodeHostSchema>;
export type CodeHost = z.infer<typeof CodeHostSchema>;
