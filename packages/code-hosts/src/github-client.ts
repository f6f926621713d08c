// GitHub and GitHub Enterprise Server through @octokit/rest. Octokit is given the connection's
// fetch (policy and token) and no token of its own, and none of its retry or throttling plugins:
// the one policy under every client does that.
import { Octokit } from "@octokit/rest";
import type {
  CodeHostClient,
  CreatePullRequestInput,
  MergeInput,
  PullRequest,
  PullRequestStatus,
} from "./code-host-client.ts";
import { combineChecks, combineReviews, statusOutcome } from "./code-host-client.ts";
import { apiBase, type CodeHostConnection } from "./connection.ts";
import { EditingHostClient, type PullRequestEdit } from "./host-client-base.ts";
import type { FetchFunction } from "./host-fetch.ts";

interface GitHubPull {
  number: number;
  node_id: string;
  html_url: string;
  title: string;
  body?: string | null;
  state: string;
  draft?: boolean;
  merged?: boolean;
  merged_at?: string | null;
  mergeable?: boolean | null;
  mergeable_state?: string;
  head: { ref: string; sha: string };
  base: { ref: string };
}

function split(repository: string): { owner: string; repo: string } {
  const [owner = "", repo = ""] = repository.split("/");
  return { owner, repo };
}

function toPullRequest(pull: GitHubPull): PullRequest {
  const merged = pull.merged === true || (pull.merged_at ?? null) !== null;
  return {
    number: pull.number,
    url: pull.html_url,
    title: pull.title,
    body: pull.body ?? "",
    headBranch: pull.head.ref,
    baseBranch: pull.base.ref,
    headSha: pull.head.sha,
    state: merged ? "merged" : pull.state === "closed" ? "closed" : pull.draft ? "draft" : "open",
  };
}

function checkRunOutcome(run: { status: string; conclusion?: string | null }) {
  if (run.status !== "completed") return "pending" as const;
  const conclusion = run.conclusion ?? "";
  return conclusion === "success" || conclusion === "neutral" || conclusion === "skipped"
    ? ("passing" as const)
    : ("failing" as const);
}

/** GitHub's commit status states. */
const STATUS_WORDS = { passing: ["success"], pending: ["pending"] };

const DRAFT_MUTATION = `mutation($id: ID!) { convertPullRequestToDraft(input: {pullRequestId: $id}) { pullRequest { id } } }`;
const READY_MUTATION = `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { id } } }`;

export class GitHubClient extends EditingHostClient implements CodeHostClient {
  private readonly octokit: Octokit;

  constructor(connection: CodeHostConnection, fetch: FetchFunction) {
    super(connection);
    this.octokit = new Octokit({
      baseUrl: apiBase(connection),
      userAgent: "deckhand-code-hosts",
      request: { fetch },
      // Octokit logs warnings (deprecations) through console by default; they are not ours to print.
      log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    });
  }

  /** Octokit's RequestError carries the host's answer as `response.data`. */
  protected override failureDetails(error: unknown) {
    return { body: (error as { response?: { data?: unknown } }).response?.data };
  }

  async findPullRequest(repository: string, branches: { head: string; base: string }) {
    const { owner, repo } = split(repository);
    const pulls = await this.call(`finding the pull request for ${branches.head}`, async () => {
      const { data } = await this.octokit.pulls.list({
        owner,
        repo,
        head: `${owner}:${branches.head}`,
        base: branches.base,
        state: "all",
        sort: "created",
        direction: "desc",
        per_page: 100,
      });
      return data as unknown as GitHubPull[];
    });
    const pull = pulls.find((candidate) => candidate.head.ref === branches.head);
    return pull === undefined ? undefined : toPullRequest(pull);
  }

  async createPullRequest(repository: string, input: CreatePullRequestInput) {
    const { owner, repo } = split(repository);
    return this.call(`creating a pull request for ${input.head}`, async () => {
      const { data } = await this.octokit.pulls.create({
        owner,
        repo,
        head: input.head,
        base: input.base,
        title: input.title,
        body: input.body,
        draft: input.draft ?? false,
      });
      return toPullRequest(data as unknown as GitHubPull);
    });
  }

  private async getPull(repository: string, number: number): Promise<GitHubPull> {
    const { owner, repo } = split(repository);
    return this.call(`reading pull request #${number}`, async () => {
      const { data } = await this.octokit.pulls.get({ owner, repo, pull_number: number });
      return data as unknown as GitHubPull;
    });
  }

  async getPullRequest(repository: string, number: number) {
    return toPullRequest(await this.getPull(repository, number));
  }

  protected edit(repository: string, number: number, operation: string, edit: PullRequestEdit) {
    const { owner, repo } = split(repository);
    return this.call(operation, async () => {
      const { data } = await this.octokit.pulls.update({
        owner,
        repo,
        pull_number: number,
        ...edit,
      });
      return toPullRequest(data as unknown as GitHubPull);
    });
  }

  async setDraft(repository: string, pullRequest: PullRequest, draft: boolean) {
    // The REST API cannot change a pull request's draft state; GraphQL can, by node id.
    const pull = await this.getPull(repository, pullRequest.number);
    await this.call(
      `marking pull request #${pullRequest.number} as ${draft ? "draft" : "ready"}`,
      () => this.octokit.graphql(draft ? DRAFT_MUTATION : READY_MUTATION, { id: pull.node_id }),
    );
    return this.getPullRequest(repository, pullRequest.number);
  }

  async comment(repository: string, number: number, body: string) {
    const { owner, repo } = split(repository);
    await this.call(`commenting on pull request #${number}`, () =>
      this.octokit.issues.createComment({ owner, repo, issue_number: number, body }),
    );
  }

  async merge(repository: string, number: number, input: MergeInput = {}) {
    const { owner, repo } = split(repository);
    await this.call(`merging pull request #${number}`, () =>
      this.octokit.pulls.merge({
        owner,
        repo,
        pull_number: number,
        ...(input.method === undefined ? {} : { merge_method: input.method }),
        ...(input.sha === undefined ? {} : { sha: input.sha }),
      }),
    );
  }

  async deleteBranch(repository: string, branch: string) {
    const { owner, repo } = split(repository);
    await this.unlessMissing(
      `deleting branch ${branch}`,
      () => this.octokit.git.deleteRef({ owner, repo, ref: `heads/${branch}` }),
      // GitHub answers 422 "Reference does not exist" for a branch already deleted.
      [404, 422],
    );
  }

  async readStatus(repository: string, number: number): Promise<PullRequestStatus> {
    const { owner, repo } = split(repository);
    const pull = await this.getPull(repository, number);
    const reviews = await this.call(`reading the reviews of pull request #${number}`, async () => {
      const { data } = await this.octokit.pulls.listReviews({
        owner,
        repo,
        pull_number: number,
        per_page: 100,
      });
      return data;
    });
    // Each reviewer's latest verdict counts; a comment leaves an earlier verdict standing.
    const latest = new Map<string, "approved" | "changes_requested" | "other">();
    for (const review of reviews) {
      const reviewer = review.user?.login ?? String(review.id);
      if (review.state === "APPROVED") latest.set(reviewer, "approved");
      else if (review.state === "CHANGES_REQUESTED") latest.set(reviewer, "changes_requested");
      else if (review.state === "DISMISSED") latest.set(reviewer, "other");
    }
    const sha = pull.head.sha;
    const [runs, combined] = await this.call(`reading the checks of ${sha}`, () =>
      Promise.all([
        this.octokit.checks.listForRef({ owner, repo, ref: sha, per_page: 100 }),
        this.octokit.repos.getCombinedStatusForRef({ owner, repo, ref: sha, per_page: 100 }),
      ]),
    );
    const outcomes = [
      ...runs.data.check_runs.map(checkRunOutcome),
      ...combined.data.statuses.map((status) => statusOutcome(status.state, STATUS_WORDS)),
    ];
    const pullRequest = toPullRequest(pull);
    return {
      pullRequest,
      review: combineReviews(latest.values()),
      checks: combineChecks(outcomes),
      mergeable:
        pullRequest.state === "merged"
          ? "unknown"
          : pull.mergeable === true
            ? "mergeable"
            : pull.mergeable === false || pull.mergeable_state === "dirty"
              ? "conflicting"
              : "unknown",
    };
  }
}
