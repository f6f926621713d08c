// What Deckhand does with pull requests, the same on every code host. Each host's client maps
// its own words (merge requests, declined, WIP:) onto these.
import type { CodeHostConnection } from "./connection.ts";

/** Where a pull request stands. A draft is open; `draft` says so separately from `open`. */
export type PullRequestState = "open" | "draft" | "merged" | "closed";

/** The reviews taken together: a request for changes outweighs approvals. */
export type ReviewState = "approved" | "changes_requested" | "pending";

/** The checks of the head commit taken together: one failing check fails them all. */
export type ChecksState = "passing" | "failing" | "pending" | "none";

/** Whether the host would merge the pull request as it stands. */
export type Mergeability = "mergeable" | "conflicting" | "unknown";

export interface PullRequest {
  /** The number people see: GitHub's number, GitLab's iid, Gitea's index, Bitbucket's id. */
  number: number;
  /** The pull request's page on the host. */
  url: string;
  title: string;
  body: string;
  headBranch: string;
  baseBranch: string;
  /** The head commit as the host last saw it; undefined when the host did not say. */
  headSha: string | undefined;
  state: PullRequestState;
}

export interface PullRequestStatus {
  pullRequest: PullRequest;
  review: ReviewState;
  checks: ChecksState;
  mergeable: Mergeability;
}

export interface CreatePullRequestInput {
  /** The branch with the changes; it must already be pushed. */
  head: string;
  /** The branch the changes are for. */
  base: string;
  title: string;
  body: string;
  /** Open as a draft; on hosts without drafts this is an `unsupported` error. */
  draft?: boolean;
}

export interface UpdatePullRequestInput {
  title?: string;
  body?: string;
}

export type MergeMethod = "merge" | "squash" | "rebase";

export interface MergeInput {
  method?: MergeMethod;
  /** Merge only if the head is still this commit (GitHub, GitLab and Gitea check it). */
  sha?: string;
}

/** What a kind of host can do, so callers can say so instead of failing half-way. */
export interface CodeHostCapabilities {
  /** Pull requests can be opened as drafts and turned into drafts and back. */
  drafts: boolean;
  /** A closed pull request can be reopened; without it `reopen` opens a new one. */
  reopen: boolean;
  /** Pull requests can be merged through the API. */
  merge: boolean;
  /** `readStatus` can say whether the pull request can be merged. */
  mergeability: boolean;
}

/**
 * A code host's pull requests, through one connection. `repository` is the path on the host
 * (`owner/name`, `group/subgroup/name` on GitLab), as `resolveRepository` gives it. Errors are
 * CodeHostErrors (`not_found`, `unauthorized`, `conflict`, `rate_limited`, `host_unavailable`,
 * `unsupported`, `token_missing`).
 */
export interface CodeHostClient {
  readonly connection: CodeHostConnection;
  readonly capabilities: CodeHostCapabilities;
  /** The newest pull request from `head` into `base`, in any state, or undefined. */
  findPullRequest(
    repository: string,
    branches: { head: string; base: string },
  ): Promise<PullRequest | undefined>;
  createPullRequest(repository: string, input: CreatePullRequestInput): Promise<PullRequest>;
  getPullRequest(repository: string, number: number): Promise<PullRequest>;
  updatePullRequest(
    repository: string,
    number: number,
    input: UpdatePullRequestInput,
  ): Promise<PullRequest>;
  /** Turns an open pull request into a draft, or a draft into one ready for review. */
  setDraft(repository: string, pullRequest: PullRequest, draft: boolean): Promise<PullRequest>;
  closePullRequest(repository: string, number: number): Promise<PullRequest>;
  /**
   * Reopens a closed pull request. Where the host cannot (Bitbucket Cloud declines for good), a
   * new pull request with the same branches, title and body is opened and returned instead.
   */
  reopenPullRequest(repository: string, pullRequest: PullRequest): Promise<PullRequest>;
  comment(repository: string, number: number, body: string): Promise<void>;
  merge(repository: string, number: number, input?: MergeInput): Promise<void>;
  /** Deletes a branch; a branch that is already gone is not an error. */
  deleteBranch(repository: string, branch: string): Promise<void>;
  /** The pull request with its review, checks and mergeability, for tracking. */
  readStatus(repository: string, number: number): Promise<PullRequestStatus>;
}

/** Combines review verdicts: any request for changes wins, then any approval. */
export function combineReviews(verdicts: Iterable<"approved" | "changes_requested" | "other">) {
  let approved = false;
  for (const verdict of verdicts) {
    if (verdict === "changes_requested") return "changes_requested" as const;
    if (verdict === "approved") approved = true;
  }
  return approved ? ("approved" as const) : ("pending" as const);
}

export type CheckOutcome = "passing" | "failing" | "pending";

/**
 * A commit status in Deckhand's words, from the host's: one of `passing` passes, one of
 * `pending` is unfinished, anything else (an error, a failure, a state the host added) fails.
 */
export function statusOutcome(
  state: string | undefined,
  words: { passing: readonly string[]; pending: readonly string[] },
): CheckOutcome {
  if (state !== undefined && words.passing.includes(state)) return "passing";
  if (state !== undefined && words.pending.includes(state)) return "pending";
  return "failing";
}

/** Combines check outcomes: any failure fails, then anything unfinished is pending. */
export function combineChecks(outcomes: Iterable<CheckOutcome>): ChecksState {
  let any = false;
  let pending = false;
  for (const outcome of outcomes) {
    any = true;
    if (outcome === "failing") return "failing";
    if (outcome === "pending") pending = true;
  }
  if (!any) return "none";
  return pending ? "pending" : "passing";
}
