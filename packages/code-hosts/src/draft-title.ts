// GitLab, Gitea and Forgejo keep a pull request's draft state in its title: GitLab reads
// `Draft:`, `[Draft]` or `(Draft)` at the start, Gitea and Forgejo `WIP:` or `[WIP]` (their
// default WORK_IN_PROGRESS_PREFIXES). Titles are kept without the marker here, so a title
// compared with the spec's is the spec's, and the marker is put back on the way out.

const GITLAB_MARKERS = /^\s*(?:draft:|\[draft\]|\(draft\))\s*/i;
const GITEA_MARKERS = /^\s*(?:wip:|\[wip\])\s*/i;

export type TitleDraftStyle = "gitlab" | "gitea";

function markers(style: TitleDraftStyle): RegExp {
  return style === "gitlab" ? GITLAB_MARKERS : GITEA_MARKERS;
}

/** The title without its draft marker, and whether it had one. */
export function readDraftTitle(title: string, style: TitleDraftStyle) {
  const pattern = markers(style);
  const draft = pattern.test(title);
  return { title: draft ? title.replace(pattern, "") : title, draft };
}

/** The title to send: with the host's draft marker when `draft`, without any otherwise. */
export function writeDraftTitle(title: string, draft: boolean, style: TitleDraftStyle): string {
  const bare = readDraftTitle(title, style).title;
  if (!draft) return bare;
  return style === "gitlab" ? `Draft: ${bare}` : `WIP: ${bare}`;
}
