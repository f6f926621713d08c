// GitLab (gitlab.com and self-managed) through @gitbeaker/rest. Gitbeaker's own requester sends
// with the global fetch, retries 429 and 502 on a fixed schedule that ignores Retry-After, and
// runs a rate limiter of its own; it is replaced by a requester over the connection's fetch, so
// the one policy decides waits and retries, and gitbeaker is never given the token.

import { createRequesterFn, type RequestOptions } from "@gitbeaker/requester-utils";
import { Branches, MergeRequestApprovals, MergeRequestNotes, MergeRequests } from "@gitbeaker/rest";
import type {
  ChecksState,
  CodeHostClient,
  CreatePullRequestInput,
  MergeInput,
  PullRequest,
  PullRequestStatus,
} from "./code-host-client.ts";
import { combineReviews } from "./code-host-client.ts";
import { apiBase, type CodeHostConnection } from "./connection.ts";
import { readDraftTitle, writeDraftTitle } from "./draft-title.ts";
import { FailedAnswer, type PullRequestEdit, TitleDraftHostClient } from "./host-client-base.ts";
import { unsupported } from "./host-failure.ts";
import type { FetchFunction } from "./host-fetch.ts";

interface GitLabMergeRequest {
  iid: number;
  web_url: string;
  title: string;
  description?: string | null;
  state: string;
  draft?: boolean;
  source_branch: string;
  target_branch: string;
  sha?: string | null;
  has_conflicts?: boolean;
  detailed_merge_status?: string;
  head_pipeline?: { status?: string } | null;
}

async function readBody(response: Response): Promise<unknown> {
  if (response.status === 204) return null;
  const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim();
  const text = await response.text();
  if (type === "application/json" && text !== "") return JSON.parse(text);
  return text;
}

/**
 * The host gitbeaker is told of. Gitbeaker always puts `/api/v4` after its host, which would not
 * fit an `apiUrl` of another shape, so the requester replaces this placeholder with the
 * connection's API base.
 */
const PLACEHOLDER_HOST = "http://gitbeaker.invalid";

/** Gitbeaker's requester, sending through the connection's fetch to the connection's API base. */
function requesterFor(base: string, fetch: FetchFunction) {
  return createRequesterFn(
    async (_service, options) => options,
    async (endpoint, rawOptions) => {
      const options = (rawOptions ?? {}) as RequestOptions;
      const query = options.searchParams ? `?${options.searchParams}` : "";
      // A resource's own prefix (notes are under `projects/`) is in the URL gitbeaker built
      // from the placeholder host; the API base is the connection's.
      const prefix = (options.prefixUrl ?? "")
        .slice(`${PLACEHOLDER_HOST}/api/v4`.length)
        .replace(/^\/+|\/+$/g, "");
      const path = prefix === "" ? endpoint : `${prefix}/${endpoint}`;
      const response = await fetch(`${base}/${path}${query}`, {
        method: options.method ?? "GET",
        headers: options.headers ?? {},
        ...(typeof options.body === "string" ? { body: options.body } : {}),
      });
      const body = await readBody(response);
      if (!response.ok) throw new FailedAnswer(response.status, body);
      return {
        body: body as Record<string, unknown>,
        headers: Object.fromEntries(response.headers),
        status: response.status,
      };
    },
  );
}

function toPullRequest(request: GitLabMergeRequest): PullRequest {
  const { title, draft } = readDraftTitle(request.title, "gitlab");
  const state =
    request.state === "merged"
      ? "merged"
      : request.state === "closed"
        ? "closed"
        : request.draft === true || draft
          ? "draft"
          : "open";
  return {
    number: request.iid,
    url: request.web_url,
    title,
    body: request.description ?? "",
    headBranch: request.source_branch,
    baseBranch: request.target_branch,
    headSha: request.sha ?? undefined,
    state,
  };
}

function pipelineChecks(status: string | undefined): ChecksState {
  if (status === undefined) return "none";
  if (status === "success" || status === "skipped") return "passing";
  if (status === "failed" || status === "canceled") return "failing";
  return "pending";
}

export class GitLabClient extends TitleDraftHostClient implements CodeHostClient {
  protected readonly draftStyle = "gitlab";
  private readonly mergeRequests: MergeRequests;
  private readonly notes: MergeRequestNotes;
  private readonly approvals: MergeRequestApprovals;
  private readonly branches: Branches;

  constructor(connection: CodeHostConnection, fetch: FetchFunction) {
    super(connection);
    const options = {
      host: PLACEHOLDER_HOST,
      requesterFn: requesterFor(apiBase(connection), fetch),
      // Waiting (for a rate limit, say) is the policy's; gitbeaker's timeout would cut it short.
      queryTimeout: null,
    };
    this.mergeRequests = new MergeRequests(options);
    this.notes = new MergeRequestNotes(options);
    this.approvals = new MergeRequestApprovals(options);
    this.branches = new Branches(options);
  }

  protected override reference(number: number): string {
    return `merge request !${number}`;
  }

  async findPullRequest(repository: string, branches: { head: string; base: string }) {
    const found = await this.call(`finding the merge request for ${branches.head}`, async () => {
      const requests = await this.mergeRequests.all({
        projectId: repository,
        sourceBranch: branches.head,
        targetBranch: branches.base,
        orderBy: "created_at",
        sort: "desc",
        perPage: 20,
        maxPages: 1,
      });
      return requests as unknown as GitLabMergeRequest[];
    });
    const request = found.find((candidate) => candidate.source_branch === branches.head);
    return request === undefined ? undefined : toPullRequest(request);
  }

  async createPullRequest(repository: string, input: CreatePullRequestInput) {
    return this.call(`creating a merge request for ${input.head}`, async () => {
      const created = await this.mergeRequests.create(
        repository,
        input.head,
        input.base,
        writeDraftTitle(input.title, input.draft ?? false, "gitlab"),
        { description: input.body },
      );
      return toPullRequest(created as unknown as GitLabMergeRequest);
    });
  }

  private async show(repository: string, number: number): Promise<GitLabMergeRequest> {
    return this.call(`reading merge request !${number}`, async () => {
      const request = await this.mergeRequests.show(repository, number);
      return request as unknown as GitLabMergeRequest;
    });
  }

  async getPullRequest(repository: string, number: number) {
    return toPullRequest(await this.show(repository, number));
  }

  /** GitLab's words: a body is a description, closing and reopening are state events. */
  protected edit(repository: string, number: number, operation: string, edit: PullRequestEdit) {
    const fields = {
      ...(edit.title === undefined ? {} : { title: edit.title }),
      ...(edit.body === undefined ? {} : { description: edit.body }),
      ...(edit.state === undefined
        ? {}
        : { stateEvent: edit.state === "closed" ? ("close" as const) : ("reopen" as const) }),
    };
    return this.call(operation, async () => {
      const edited = await this.mergeRequests.edit(repository, number, fields);
      return toPullRequest(edited as unknown as GitLabMergeRequest);
    });
  }

  async comment(repository: string, number: number, body: string) {
    await this.call(`commenting on merge request !${number}`, () =>
      this.notes.create(repository, number, body),
    );
  }

  async merge(repository: string, number: number, input: MergeInput = {}) {
    if (input.method === "rebase") {
      throw unsupported(this.connection, "merge by rebasing through the API; use merge or squash");
    }
    await this.call(`merging merge request !${number}`, () =>
      this.mergeRequests.merge(repository, number, {
        ...(input.method === "squash" ? { squash: true } : {}),
        ...(input.sha === undefined ? {} : { sha: input.sha }),
      }),
    );
  }

  async deleteBranch(repository: string, branch: string) {
    await this.unlessMissing(`deleting branch ${branch}`, () =>
      this.branches.remove(repository, branch),
    );
  }

  async readStatus(repository: string, number: number): Promise<PullRequestStatus> {
    const request = await this.show(repository, number);
    const [approvals, reviewers] = await this.call(
      `reading the reviews of merge request !${number}`,
      () =>
        Promise.all([
          this.approvals.showConfiguration(repository, { mergerequestIId: number }),
          this.mergeRequests.showReviewers(repository, number),
        ]),
    );
    const approvedBy = (approvals as { approved_by?: unknown[] }).approved_by ?? [];
    const verdicts = [
      ...approvedBy.map(() => "approved" as const),
      ...(reviewers as { state?: string }[]).map((reviewer) =>
        reviewer.state === "requested_changes"
          ? ("changes_requested" as const)
          : reviewer.state === "approved"
            ? ("approved" as const)
            : ("other" as const),
      ),
    ];
    const pullRequest = toPullRequest(request);
    const status = request.detailed_merge_status ?? "";
    return {
      pullRequest,
      review: combineReviews(verdicts),
      checks: pipelineChecks(request.head_pipeline?.status ?? undefined),
      mergeable:
        pullRequest.state === "merged"
          ? "unknown"
          : request.has_conflicts === true || status === "conflict"
            ? "conflicting"
            : status === "checking" || status === "unchecked" || status === "preparing"
              ? "unknown"
              : "mergeable",
    };
  }
}
