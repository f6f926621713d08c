// Publishing one changeset's pull request, idempotently: found by its branches before anything
// is created, so a re-apply (or a retry after an answer was lost) updates the one pull request
// there is instead of opening a second.
import type { CodeHostClient, PullRequest } from "./code-host-client.ts";
import { CodeHostError } from "./code-host-error.ts";
import { unsupported } from "./host-failure.ts";

export interface PublishPullRequestInput {
  repository: string;
  head: string;
  base: string;
  title: string;
  body: string;
  /** Publish as a draft; on a host without drafts this is an `unsupported` error. */
  draft: boolean;
}

export interface PublishedPullRequest {
  pullRequest: PullRequest;
  /** What publishing did: opened it, changed it, or found it as it should be. */
  action: "created" | "updated" | "unchanged";
}

/**
 * Makes the pull request from `head` into `base` say what the changeset says: creates it when
 * there is none; otherwise updates its title and body where they differ, reopens it when it was
 * closed, and turns it into a draft or out of one as asked. A merged pull request is left as it
 * is. When the answer to a create is lost (a 5xx after the host acted), the pull request is
 * looked up again before the error is given up on, so it is never opened twice.
 */
export async function publishPullRequest(
  client: CodeHostClient,
  input: PublishPullRequestInput,
): Promise<PublishedPullRequest> {
  if (input.draft && !client.capabilities.drafts) {
    throw unsupported(client.connection, "open draft pull requests");
  }
  const branches = { head: input.head, base: input.base };
  let existing = await client.findPullRequest(input.repository, branches);
  if (existing === undefined) {
    try {
      const pullRequest = await client.createPullRequest(input.repository, {
        ...branches,
        title: input.title,
        body: input.body,
        draft: input.draft,
      });
      return { pullRequest, action: "created" };
    } catch (error) {
      const retryable =
        CodeHostError.isInstance(error) &&
        (error.code === "host_unavailable" || error.code === "conflict");
      if (!retryable) throw error;
      // The host may have opened it before failing (or another apply did): look again.
      existing = await client.findPullRequest(input.repository, branches);
      if (existing === undefined) throw error;
    }
  }
  if (existing.state === "merged") return { pullRequest: existing, action: "unchanged" };
  let pullRequest = existing;
  let changed = false;
  if (pullRequest.state === "closed") {
    pullRequest = await client.reopenPullRequest(input.repository, pullRequest);
    changed = true;
  }
  if (pullRequest.title !== input.title || pullRequest.body !== input.body) {
    pullRequest = await client.updatePullRequest(input.repository, pullRequest.number, {
      ...(pullRequest.title === input.title ? {} : { title: input.title }),
      ...(pullRequest.body === input.body ? {} : { body: input.body }),
    });
    changed = true;
  }
  const isDraft = pullRequest.state === "draft";
  if (client.capabilities.drafts && isDraft !== input.draft) {
    pullRequest = await client.setDraft(input.repository, pullRequest, input.draft);
    changed = true;
  }
  return { pullRequest, action: changed ? "updated" : "unchanged" };
}
