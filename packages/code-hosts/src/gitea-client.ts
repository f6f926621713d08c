// Gitea and Forgejo through gitea-js, a client generated from Gitea's own swagger document (no
// dependencies; Forgejo keeps the same v1 API for everything used here). It is given the
// connection's fetch and no token. It does not encode path parameters, so this client does.
import { Api, type PullRequest as GiteaPull } from "gitea-js";
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
import { readDraftTitle, writeDraftTitle } from "./draft-title.ts";
import { hostFailure, isResponse } from "./host-failure.ts";
import type { FetchFunction } from "./host-fetch.ts";

function split(repository: string): { owner: string; repo: string } {
  const [owner = "", repo = ""] = repository.split("/");
  return { owner: encodeURIComponent(owner), repo: encodeURIComponent(repo) };
}

/** Gitea routes branch paths as a wildcard (`branches/*`), so slashes stay; the rest is encoded. */
function branchPath(branch: string): string {
  return branch.split("/").map(encodeURIComponent).join("/");
}

function toPullRequest(pull: GiteaPull): PullRequest {
  const { title, draft } = readDraftTitle(pull.title ?? "", "gitea");
  return {
    number: pull.number ?? 0,
    url: pull.html_url ?? "",
    title,
    body: pull.body ?? "",
    headBranch: pull.head?.ref ?? "",
    baseBranch: pull.base?.ref ?? "",
    headSha: pull.head?.sha ?? undefined,
    state: pull.merged
      ? "merged"
      : pull.state === "closed"
        ? "closed"
        : pull.draft === true || draft
          ? "draft"
          : "open",
  };
}

function statusOutcome(state: string | undefined) {
  if (state === "success" || state === "warning") return "passing" as const;
  if (state === "pending") return "pending" as const;
  return "failing" as const;
}

/** gitea-js throws the Response of a failed request, with the parsed body as `error`. */
function answerOf(error: unknown): { status?: number; body?: unknown } {
  if (isResponse(error))
    return { status: error.status, body: (error as { error?: unknown }).error };
  return {};
}

export class GiteaClient implements CodeHostClient {
  readonly capabilities: CodeHostCapabilities = {
    drafts: true,
    reopen: true,
    merge: true,
    mergeability: true,
  };
  private readonly name: string;
  private readonly api: Api<unknown>;

  readonly connection: CodeHostConnection;

  constructor(connection: CodeHostConnection, fetch: FetchFunction) {
    this.connection = connection;
    this.name = connectionName(connection);
    this.api = new Api({
      baseUrl: apiBase(connection),
      baseApiParams: { format: "json" },
      customFetch: fetch,
    });
  }

  private async call<T>(operation: string, run: () => Promise<{ data: T }>): Promise<T> {
    try {
      return (await run()).data;
    } catch (error) {
      throw hostFailure(error, this.name, operation, answerOf(error));
    }
  }

  async findPullRequest(repository: string, branches: { head: string; base: string }) {
    const { owner, repo } = split(repository);
    try {
      const { data } = await this.api.repos.repoGetPullRequestByBaseHead(
        owner,
        repo,
        encodeURIComponent(branches.base),
        branchPath(branches.head),
      );
      return toPullRequest(data);
    } catch (error) {
      const failure = hostFailure(
        error,
        this.name,
        `finding the pull request for ${branches.head}`,
        answerOf(error),
      );
      if (failure.status === 404) return undefined;
      throw failure;
    }
  }

  async createPullRequest(repository: string, input: CreatePullRequestInput) {
    const { owner, repo } = split(repository);
    const pull = await this.call(`creating a pull request for ${input.head}`, () =>
      this.api.repos.repoCreatePullRequest(owner, repo, {
        head: input.head,
        base: input.base,
        // Gitea has no draft flag on creation: a `WIP:` title is its draft.
        title: writeDraftTitle(input.title, input.draft ?? false, "gitea"),
        body: input.body,
      }),
    );
    return toPullRequest(pull);
  }

  private async getPull(repository: string, number: number): Promise<GiteaPull> {
    const { owner, repo } = split(repository);
    return this.call(`reading pull request #${number}`, () =>
      this.api.repos.repoGetPullRequest(owner, repo, number),
    );
  }

  async getPullRequest(repository: string, number: number) {
    return toPullRequest(await this.getPull(repository, number));
  }

  private async edit(
    repository: string,
    number: number,
    operation: string,
    fields: { title?: string; body?: string; state?: "open" | "closed" },
  ) {
    const { owner, repo } = split(repository);
    const pull = await this.call(operation, () =>
      this.api.repos.repoEditPullRequest(owner, repo, number, fields),
    );
    return toPullRequest(pull);
  }

  async updatePullRequest(repository: string, number: number, input: UpdatePullRequestInput) {
    const fields: { title?: string; body?: string } = {};
    if (input.title !== undefined) {
      // The draft marker lives in the title: keep it when the title changes.
      const current = toPullRequest(await this.getPull(repository, number));
      fields.title = writeDraftTitle(input.title, current.state === "draft", "gitea");
    }
    if (input.body !== undefined) fields.body = input.body;
    return this.edit(repository, number, `updating pull request #${number}`, fields);
  }

  setDraft(repository: string, pullRequest: PullRequest, draft: boolean) {
    return this.edit(
      repository,
      pullRequest.number,
      `marking pull request #${pullRequest.number}`,
      {
        title: writeDraftTitle(pullRequest.title, draft, "gitea"),
      },
    );
  }

  closePullRequest(repository: string, number: number) {
    return this.edit(repository, number, `closing pull request #${number}`, { state: "closed" });
  }

  reopenPullRequest(repository: string, pullRequest: PullRequest) {
    return this.edit(
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
      this.api.repos.issueCreateComment(owner, repo, number, { body }),
    );
  }

  async merge(repository: string, number: number, input: MergeInput = {}) {
    const { owner, repo } = split(repository);
    const method = input.method ?? "merge";
    await this.call(`merging pull request #${number}`, () =>
      this.api.repos.repoMergePullRequest(owner, repo, number, {
        Do: method,
        ...(input.sha === undefined ? {} : { head_commit_id: input.sha }),
      }),
    );
  }

  async deleteBranch(repository: string, branch: string) {
    const { owner, repo } = split(repository);
    try {
      await this.api.repos.repoDeleteBranch(owner, repo, branchPath(branch));
    } catch (error) {
      const failure = hostFailure(error, this.name, `deleting branch ${branch}`, answerOf(error));
      if (failure.status === 404) return;
      throw failure;
    }
  }

  async readStatus(repository: string, number: number): Promise<PullRequestStatus> {
    const { owner, repo } = split(repository);
    const pull = await this.getPull(repository, number);
    const reviews = await this.call(`reading the reviews of pull request #${number}`, () =>
      this.api.repos.repoListPullReviews(owner, repo, number, { limit: 50 }),
    );
    const latest = new Map<string, "approved" | "changes_requested" | "other">();
    for (const review of reviews) {
      if (review.dismissed || review.stale) continue;
      const reviewer = review.user?.login ?? String(review.id);
      if (review.state === "APPROVED") latest.set(reviewer, "approved");
      else if (review.state === "REQUEST_CHANGES") latest.set(reviewer, "changes_requested");
    }
    const pullRequest = toPullRequest(pull);
    let checks: PullRequestStatus["checks"] = "none";
    if (pullRequest.headSha !== undefined) {
      const sha = pullRequest.headSha;
      const combined = await this.call(`reading the checks of ${sha}`, () =>
        this.api.repos.repoGetCombinedStatusByRef(owner, repo, sha, { limit: 50 }),
      );
      checks = combineChecks(
        (combined.statuses ?? []).map((status) => statusOutcome(status.status)),
      );
    }
    return {
      pullRequest,
      review: combineReviews(latest.values()),
      checks,
      // Gitea reports a draft (WIP) as not mergeable whatever its conflicts, so a draft's
      // `false` says nothing.
      mergeable:
        pullRequest.state === "merged"
          ? "unknown"
          : pull.mergeable === true
            ? "mergeable"
            : pull.mergeable === false && pullRequest.state !== "draft"
              ? "conflicting"
              : "unknown",
    };
  }
}
