// Bitbucket Cloud through @coderabbitai/bitbucket: openapi-fetch over types generated from
// Atlassian's own OpenAPI document, ESM, one small runtime dependency, and a `fetch` option (the
// older `bitbucket` package pulls node-fetch 2, prints a banner, and cannot read a body-less
// 204). Its typed queries lack Bitbucket's filter language (`q`, `sort`, repeated `state`), so
// the list query is cast once below.
import { createBitbucketCloudClient, type OpenApi } from "@coderabbitai/bitbucket/cloud";
import type {
  CodeHostCapabilities,
  CodeHostClient,
  CreatePullRequestInput,
  MergeInput,
  MergeMethod,
  PullRequest,
  PullRequestStatus,
  UpdatePullRequestInput,
} from "./code-host-client.ts";
import { combineChecks, combineReviews, statusOutcome } from "./code-host-client.ts";
import { apiBase, type CodeHostConnection } from "./connection.ts";
import { FailedAnswer, HostClientBase } from "./host-client-base.ts";
import type { FetchFunction } from "./host-fetch.ts";

type Schemas = OpenApi.components["schemas"];
type BitbucketPull = Schemas["pullrequest"];
type BitbucketClient = ReturnType<typeof createBitbucketCloudClient>;

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * openapi-fetch answers rather than throws: an answer other than 2xx is thrown here, so that the
 * operation it was for is named where it is caught.
 */
async function dataOf<T>(answer: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await answer;
  if (!response.ok) throw new FailedAnswer(response.status, error);
  return data as T;
}

function split(repository: string): { workspace: string; repo_slug: string } {
  const [workspace = "", repo_slug = ""] = repository.split("/");
  return { workspace, repo_slug };
}

const MERGE_STRATEGY: Record<MergeMethod, "merge_commit" | "squash" | "rebase_fast_forward"> = {
  merge: "merge_commit",
  squash: "squash",
  rebase: "rebase_fast_forward",
};

/** Quotes a value for Bitbucket's query language (`q=`): double quotes, backslash escapes. */
function quoted(value: string): string {
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

function toPullRequest(pull: BitbucketPull): PullRequest {
  const state = pull.state ?? "OPEN";
  return {
    number: pull.id ?? 0,
    url: pull.links?.html?.href ?? "",
    title: pull.title ?? "",
    body: pull.summary?.raw ?? "",
    headBranch: pull.source?.branch?.name ?? "",
    baseBranch: pull.destination?.branch?.name ?? "",
    headSha: pull.source?.commit?.hash ?? undefined,
    state:
      state === "MERGED"
        ? "merged"
        : state === "OPEN"
          ? pull.draft === true
            ? "draft"
            : "open"
          : // DECLINED and SUPERSEDED: closed without merging.
            "closed",
  };
}

/** Bitbucket's commit status states. */
const STATUS_WORDS = { passing: ["SUCCESSFUL"], pending: ["INPROGRESS"] };

export class BitbucketCloudClient extends HostClientBase implements CodeHostClient {
  override readonly capabilities: CodeHostCapabilities = {
    drafts: true,
    // A declined pull request stays declined; `reopen` opens a new one.
    reopen: false,
    merge: true,
    // The API has no mergeability flag; conflicts only show in a per-file diffstat.
    mergeability: false,
  };
  private readonly client: BitbucketClient;

  constructor(connection: CodeHostConnection, fetch: FetchFunction) {
    super(connection);
    this.client = createBitbucketCloudClient({
      baseUrl: apiBase(connection),
      headers: { accept: "application/json" },
      fetch: (request: Request) => fetch(request),
    });
  }

  /** An openapi-fetch call's data; a failure becomes a CodeHostError that names the operation. */
  private read<T>(operation: string, run: () => Promise<Answer<T>>): Promise<T> {
    return this.call(operation, () => dataOf(run()));
  }

  async findPullRequest(repository: string, branches: { head: string; base: string }) {
    const query = {
      q: `source.branch.name = ${quoted(branches.head)} AND destination.branch.name = ${quoted(branches.base)}`,
      state: ["OPEN", "MERGED", "DECLINED", "SUPERSEDED"],
      sort: "-created_on",
      pagelen: 10,
    };
    const page = await this.read(`finding the pull request for ${branches.head}`, () =>
      this.client.GET("/repositories/{workspace}/{repo_slug}/pullrequests", {
        params: { path: split(repository), query: query as never },
      }),
    );
    const pull = (page?.values ?? []).find(
      (candidate) => candidate.source?.branch?.name === branches.head,
    );
    return pull === undefined ? undefined : toPullRequest(pull);
  }

  async createPullRequest(repository: string, input: CreatePullRequestInput) {
    const pull = await this.read(`creating a pull request for ${input.head}`, () =>
      this.client.POST("/repositories/{workspace}/{repo_slug}/pullrequests", {
        params: { path: split(repository) },
        body: {
          type: "pullrequest",
          title: input.title,
          summary: { raw: input.body },
          source: { branch: { name: input.head } },
          destination: { branch: { name: input.base } },
          draft: input.draft ?? false,
          close_source_branch: false,
        } as BitbucketPull,
      }),
    );
    return toPullRequest(pull);
  }

  async getPullRequest(repository: string, number: number) {
    return toPullRequest(await this.getPull(repository, number));
  }

  private getPull(repository: string, number: number) {
    return this.read(`reading pull request #${number}`, () =>
      this.client.GET("/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}", {
        params: { path: { ...split(repository), pull_request_id: number } },
      }),
    );
  }

  private async put(
    repository: string,
    number: number,
    operation: string,
    fields: { title?: string; summary?: { raw: string }; draft?: boolean },
  ) {
    const pull = await this.read(operation, () =>
      this.client.PUT("/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}", {
        params: { path: { ...split(repository), pull_request_id: number } },
        body: { type: "pullrequest", ...fields } as BitbucketPull,
      }),
    );
    return toPullRequest(pull);
  }

  updatePullRequest(repository: string, number: number, input: UpdatePullRequestInput) {
    return this.put(repository, number, `updating pull request #${number}`, {
      ...(input.title === undefined ? {} : { title: input.title }),
      ...(input.body === undefined ? {} : { summary: { raw: input.body } }),
    });
  }

  setDraft(repository: string, pullRequest: PullRequest, draft: boolean) {
    return this.put(repository, pullRequest.number, `marking pull request #${pullRequest.number}`, {
      draft,
    });
  }

  async closePullRequest(repository: string, number: number) {
    const pull = await this.read(`declining pull request #${number}`, () =>
      this.client.POST(
        "/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/decline",
        { params: { path: { ...split(repository), pull_request_id: number } } },
      ),
    );
    return toPullRequest(pull);
  }

  async reopenPullRequest(repository: string, pullRequest: PullRequest) {
    if (pullRequest.state === "open" || pullRequest.state === "draft") return pullRequest;
    return this.createPullRequest(repository, {
      head: pullRequest.headBranch,
      base: pullRequest.baseBranch,
      title: pullRequest.title,
      body: pullRequest.body,
    });
  }

  async comment(repository: string, number: number, body: string) {
    await this.read(`commenting on pull request #${number}`, () =>
      this.client.POST(
        "/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/comments",
        {
          params: { path: { ...split(repository), pull_request_id: number } },
          body: { type: "pullrequest_comment", content: { raw: body } } as never,
        },
      ),
    );
  }

  async merge(repository: string, number: number, input: MergeInput = {}) {
    await this.read(`merging pull request #${number}`, () =>
      this.client.POST(
        "/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/merge",
        {
          params: { path: { ...split(repository), pull_request_id: number } },
          body: {
            type: "pullrequest_merge_parameters",
            merge_strategy: MERGE_STRATEGY[input.method ?? "merge"],
          },
        },
      ),
    );
  }

  async deleteBranch(repository: string, branch: string) {
    await this.unlessMissing(`deleting branch ${branch}`, () =>
      dataOf(
        this.client.DELETE("/repositories/{workspace}/{repo_slug}/refs/branches/{name}", {
          params: { path: { ...split(repository), name: branch } },
          parseAs: "text",
        }),
      ),
    );
  }

  async readStatus(repository: string, number: number): Promise<PullRequestStatus> {
    const pull = await this.getPull(repository, number);
    const statuses = await this.read(`reading the checks of pull request #${number}`, () =>
      this.client.GET(
        "/repositories/{workspace}/{repo_slug}/pullrequests/{pull_request_id}/statuses",
        {
          params: {
            path: { ...split(repository), pull_request_id: number },
            query: { pagelen: 100 } as never,
          },
        },
      ),
    );
    const verdicts = (pull.participants ?? []).map((participant) =>
      participant.state === "changes_requested"
        ? ("changes_requested" as const)
        : participant.approved === true || participant.state === "approved"
          ? ("approved" as const)
          : ("other" as const),
    );
    return {
      pullRequest: toPullRequest(pull),
      review: combineReviews(verdicts),
      checks: combineChecks(
        (statuses?.values ?? []).map((status) => statusOutcome(status.state, STATUS_WORDS)),
      ),
      mergeable: "unknown",
    };
  }
}
