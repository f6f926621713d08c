// Gitea and Forgejo through gitea-js, a client generated from Gitea's own swagger document (no
// dependencies; Forgejo keeps the same v1 API for everything used here). It is given the
// connection's fetch and no token. It does not encode path parameters, so this client does.
import { Api, type PullRequest as GiteaPull } from "gitea-js";
import type {
  CodeHostClient,
  CreatePullRequestInput,
  MergeInput,
  PullRequest,
  PullRequestStatus,
} from "./code-host-client.ts";
import { combineChecks, combineReviews, statusOutcome } from "./code-host-client.ts";
import { apiBase, type CodeHostConnection } from "./connection.ts";
import { readDraftTitle, writeDraftTitle } from "./draft-title.ts";
import { type PullRequestEdit, TitleDraftHostClient } from "./host-client-base.ts";
import { isResponse } from "./host-failure.ts";
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

/** Gitea's commit status states; a warning passes. */
const STATUS_WORDS = { passing: ["success", "warning"], pending: ["pending"] };

export class GiteaClient extends TitleDraftHostClient implements CodeHostClient {
  protected readonly draftStyle = "gitea";
  private readonly api: Api<unknown>;

  constructor(connection: CodeHostConnection, fetch: FetchFunction) {
    super(connection);
    this.api = new Api({
      baseUrl: apiBase(connection),
      baseApiParams: { format: "json" },
      customFetch: fetch,
    });
  }

  /** gitea-js throws the Response of a failed request, with the parsed body as `error`. */
  protected override failureDetails(error: unknown): { status?: number; body?: unknown } {
    if (!isResponse(error)) return {};
    return { status: error.status, body: (error as { error?: unknown }).error };
  }

  /** A gitea-js call's data; a failure becomes a CodeHostError that names the operation. */
  private async read<T>(operation: string, run: () => Promise<{ data: T }>): Promise<T> {
    return (await this.call(operation, run)).data;
  }

  async findPullRequest(repository: string, branches: { head: string; base: string }) {
    const { owner, repo } = split(repository);
    const found = await this.unlessMissing(`finding the pull request for ${branches.head}`, () =>
      this.api.repos.repoGetPullRequestByBaseHead(
        owner,
        repo,
        encodeURIComponent(branches.base),
        branchPath(branches.head),
      ),
    );
    return found === undefined ? undefined : toPullRequest(found.data);
  }

  async createPullRequest(repository: string, input: CreatePullRequestInput) {
    const { owner, repo } = split(repository);
    const pull = await this.read(`creating a pull request for ${input.head}`, () =>
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
    return this.read(`reading pull request #${number}`, () =>
      this.api.repos.repoGetPullRequest(owner, repo, number),
    );
  }

  async getPullRequest(repository: string, number: number) {
    return toPullRequest(await this.getPull(repository, number));
  }

  protected async edit(
    repository: string,
    number: number,
    operation: string,
    edit: PullRequestEdit,
  ) {
    const { owner, repo } = split(repository);
    const pull = await this.read(operation, () =>
      this.api.repos.repoEditPullRequest(owner, repo, number, edit),
    );
    return toPullRequest(pull);
  }

  async comment(repository: string, number: number, body: string) {
    const { owner, repo } = split(repository);
    await this.read(`commenting on pull request #${number}`, () =>
      this.api.repos.issueCreateComment(owner, repo, number, { body }),
    );
  }

  async merge(repository: string, number: number, input: MergeInput = {}) {
    const { owner, repo } = split(repository);
    const method = input.method ?? "merge";
    await this.read(`merging pull request #${number}`, () =>
      this.api.repos.repoMergePullRequest(owner, repo, number, {
        Do: method,
        ...(input.sha === undefined ? {} : { head_commit_id: input.sha }),
      }),
    );
  }

  async deleteBranch(repository: string, branch: string) {
    const { owner, repo } = split(repository);
    await this.unlessMissing(`deleting branch ${branch}`, () =>
      this.api.repos.repoDeleteBranch(owner, repo, branchPath(branch)),
    );
  }

  async readStatus(repository: string, number: number): Promise<PullRequestStatus> {
    const { owner, repo } = split(repository);
    const pull = await this.getPull(repository, number);
    const reviews = await this.read(`reading the reviews of pull request #${number}`, () =>
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
      const combined = await this.read(`reading the checks of ${sha}`, () =>
        this.api.repos.repoGetCombinedStatusByRef(owner, repo, sha, { limit: 50 }),
      );
      checks = combineChecks(
        (combined.statuses ?? []).map((status) => statusOutcome(status.status, STATUS_WORDS)),
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
