// GitHub and GitHub Enterprise Server through @octokit/rest. Octokit is given the connection's
// fetch (policy and token) and no token of its own, and none of its retry or throttling plugins:
// the one policy under every client does that.
import { Octokit } from "@octokit/rest";
import type {
  CodeHostCapabilities,
  CodeHostClient,
  CreatePullRequestInput,
  MergeInput,
  PullRequest,
  PullRequestStatus,
  UpdatePullRequestInput,
} from "./code-host-client.ts";
import { combineChecks, combineReviews } from "./code-host-client.ts";
import { apiBase, type CodeHostConnection, connectionName } from "./connection.ts";
import { hostFailure } from "./host-failure.ts";
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

function statusOutcome(state: string) {
  if (state === "success") return "passing" as const;
  if (state === "pending") return "pending" as const;
  return "failing" as const;
}

const DRAFT_MUTATION = `mutation($id: ID!) { convertPullRequestToDraft(input: {pullRequestId: $id}) { pullRequest { id } } }`;
const READY_MUTATION = `mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { id } } }`;

export class GitHubClient implements CodeHostClient {
  readonly capabilities: CodeHostCapabilities = {
    drafts: true,
    reopen: true,
    merge: true,
    mergeability: true,
  };
  private readonly octokit: Octokit;
  private readonly name: string;

  readonly connection: CodeHostConnection;

  constructor(connection: CodeHostConnection, fetch: FetchFunction) {
    this.connection = connection;
    this.name = connectionName(connection);
    this.octokit = new Octokit({
      baseUrl: apiBase(connection),
      userAgent: "deckhand-code-hosts",
      request: { fetch },
      // Octokit logs warnings (deprecations) through console by default; they are not ours to print.
      log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    });
  }

  private async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      const response = (error as { response?: { data?: unknown } }).response;
      throw hostFailure(error, this.name, operation, { body: response?.data });
    }
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

  private async patch(
    repository: string,
    number: number,
    operation: string,
    fields: { title?: string; body?: string; state?: "open" | "closed" },
  ) {
    const { owner, repo } = split(repository);
    return this.call(operation, async () => {
      const { data } = await this.octokit.pulls.update({
        owner,
        repo,
        pull_number: number,
        ...fields,
      });
      return toPullRequest(data as unknown as GitHubPull);
    });
  }

  updatePullRequest(repository: string, number: number, input: UpdatePullRequestInput) {
    return this.patch(repository, number, `updating pull request #${number}`, input);
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

  closePullRequest(repository: string, number: number) {
    return this.patch(repository, number, `closing pull request #${number}`, { state: "closed" });
  }

  reopenPullRequest(repository: string, pullRequest: PullRequest) {
    return this.patch(
      repository,
      pullRequest.number,
      `reopening pull request #${pullRequest.number}`,
      {
        state: "open",
      },
    );
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
    try {
      await this.octokit.git.deleteRef({ owner, repo, ref: `heads/${branch}` });
    } catch (error) {
      const failure = hostFailure(error, this.name, `deleting branch ${branch}`, {
        body: (error as { response?: { data?: unknown } }).response?.data,
      });
      // GitHub answers 422 "Reference does not exist" for a branch already deleted.
      if (failure.status === 404 || failure.status === 422) return;
      throw failure;
    }
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
      ...combined.data.statuses.map((status) => statusOutcome(status.state)),
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
