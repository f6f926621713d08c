// Why a changeset cannot be published yet, in words that name what is really missing: the
// apply, the push (a directory code host's working copy is not pushed, or the run asked for no
// push), or a code host connection for its repository, each with what to do about it.
import type { StoredWorkspaceDefinition } from "../stored-run.ts";

export interface PublishBlockerInput {
  repository: string;
  branch: string;
  applied: boolean;
  pushed: boolean;
  /** Where the repository came from (its host, working copy and URL). */
  definition: Pick<StoredWorkspaceDefinition, "repository">;
  /** The run asked for no push (`push: false`). */
  pushRefused: boolean;
  /** A code host connection matches the repository's URL. */
  connected: boolean;
}

/** The reason a changeset cannot be published now, or null when it can. */
export function publishBlocker(input: PublishBlockerInput): string | null {
  const { repository, branch } = input;
  const changeset = `changeset ${repository}@${branch}`;
  if (!input.applied) return `${changeset} is not applied yet; apply its run first`;
  const source = input.definition.repository;
  if (source.host.type === "directory") {
    // The branch is there, in the working copy; a pull request needs a remote and a host's API.
    return `${changeset} is applied as the local branch ${branch} in ${source.path}, which comes from a directory code host: it has no remote URL a code host connection can match, so Deckhand cannot open a pull request for it. Push ${branch} and open the pull request yourself, or list the repository as a git URL code host with a matching entry in codeHostConnections (config.json)`;
  }
  if (!input.connected) {
    return `${changeset} cannot be published: no code host connection in codeHostConnections (config.json) matches ${source.url ?? repository}; add one with a token that can open pull requests there`;
  }
  if (!input.pushed) {
    return input.pushRefused
      ? `${changeset} is applied but was not pushed, as its run asked (push: false); apply the run again without push: false to push it, then publish it`
      : `${changeset} is applied but its branch was not pushed to ${source.url ?? "its remote"}; apply its run again to push it, then publish it`;
  }
  return null;
}
