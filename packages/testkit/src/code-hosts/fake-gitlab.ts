// GitLab's REST API v4 for merge requests: exactly what @deckhand/code-hosts calls through
// gitbeaker. A project is named by its URL-encoded path (`group%2Fsub%2Fapi`). As on GitLab, a
// `Draft:` title prefix is what makes a merge request a draft.
import type { FakePullRequest } from "./fake-code-host-model.ts";
import {
  type FakeRoute,
  type FakeRouteContext,
  notFound,
  route,
  stringField,
} from "./fake-routes.ts";

const DRAFT = /^\s*(?:draft:|\[draft\]|\(draft\))/i;

function renderMergeRequest(pull: FakePullRequest, context: FakeRouteContext) {
  const checks = context.model.checksOf(pull);
  const pipelineStatus =
    checks === "passing" ? "success" : checks === "failing" ? "failed" : "running";
  return {
    id: pull.id,
    iid: pull.number,
    title: pull.title,
    description: pull.body,
    state: pull.state === "open" ? "opened" : pull.state,
    draft: pull.draft,
    work_in_progress: pull.draft,
    source_branch: pull.head,
    target_branch: pull.base,
    sha: pull.headSha,
    web_url: `${context.webUrl}/${pull.repository}/-/merge_requests/${pull.number}`,
    has_conflicts: !pull.mergeable,
    detailed_merge_status:
      pull.state !== "open" ? "not_open" : pull.mergeable ? "mergeable" : "conflict",
    head_pipeline: checks === "none" ? null : { id: 1, status: pipelineStatus, sha: pull.headSha },
  };
}

const MRS = "/api/v4/projects/:project/merge_requests";

export const gitlabRoutes: FakeRoute[] = [
  route("GET", MRS, ({ params, query }, context) => {
    const project = params.project ?? "";
    if (context.model.repository(project) === undefined) return notFound("404 Project Not Found");
    const source = query.get("source_branch") ?? undefined;
    const target = query.get("target_branch") ?? undefined;
    const state = query.get("state") ?? "all";
    const pulls = context.model.pullRequests
      .filter((pull) => pull.repository === project)
      .filter((pull) => source === undefined || pull.head === source)
      .filter((pull) => target === undefined || pull.base === target)
      .filter(
        (pull) =>
          state === "all" || (state === "opened" ? pull.state === "open" : pull.state === state),
      )
      .reverse()
      .map((pull) => renderMergeRequest(context.model.refresh(pull), context));
    return { status: 200, body: pulls, headers: { "x-page": "1", "x-total-pages": "1" } };
  }),
  route("POST", MRS, ({ params, body }, context) => {
    const repository = context.model.repository(params.project ?? "");
    if (repository === undefined) return notFound("404 Project Not Found");
    const head = stringField(body, "source_branch") ?? "";
    const base = stringField(body, "target_branch") ?? "";
    const headSha = context.model.branchSha(repository, head);
    if (headSha === undefined || context.model.branchSha(repository, base) === undefined) {
      return { status: 400, body: { message: { source_branch: ["is invalid"] } } };
    }
    const open = context.model.openFor(repository.path, head, base);
    if (open !== undefined) {
      return {
        status: 409,
        body: {
          message: [
            `Another open merge request already exists for this source branch: !${open.number}`,
          ],
        },
      };
    }
    const title = stringField(body, "title") ?? "";
    const pull = context.model.create({
      repository: repository.path,
      head,
      base,
      title,
      body: stringField(body, "description") ?? "",
      draft: DRAFT.test(title),
      headSha,
    });
    return { status: 201, body: renderMergeRequest(pull, context) };
  }),
  route("GET", `${MRS}/:iid`, ({ params }, context) => {
    const pull = context.model.find(params.project ?? "", Number(params.iid));
    return pull === undefined
      ? notFound("404 Not found")
      : { status: 200, body: renderMergeRequest(pull, context) };
  }),
  route("PUT", `${MRS}/:iid`, ({ params, body }, context) => {
    const pull = context.model.find(params.project ?? "", Number(params.iid));
    if (pull === undefined) return notFound("404 Not found");
    const title = stringField(body, "title");
    const description = stringField(body, "description");
    const event = stringField(body, "state_event");
    if (title !== undefined) {
      pull.title = title;
      pull.draft = DRAFT.test(title);
    }
    if (description !== undefined) pull.body = description;
    if (event === "close" && pull.state === "open") pull.state = "closed";
    if (event === "reopen" && pull.state === "closed") pull.state = "open";
    return { status: 200, body: renderMergeRequest(context.model.refresh(pull), context) };
  }),
  route("PUT", `${MRS}/:iid/merge`, ({ params, body }, context) => {
    const pull = context.model.find(params.project ?? "", Number(params.iid));
    if (pull === undefined) return notFound("404 Not found");
    if (pull.state !== "open" || pull.draft || !pull.mergeable) {
      return { status: 405, body: { message: "405 Method Not Allowed" } };
    }
    const sha = stringField(body, "sha");
    if (sha !== undefined && sha !== pull.headSha) {
      return { status: 409, body: { message: "SHA does not match HEAD of source branch" } };
    }
    pull.state = "merged";
    return { status: 200, body: renderMergeRequest(pull, context) };
  }),
  route("POST", `${MRS}/:iid/notes`, ({ params, body }, { model }) => {
    const pull = model.find(params.project ?? "", Number(params.iid));
    if (pull === undefined) return notFound("404 Not found");
    pull.comments.push({ user: "deckhand", body: stringField(body, "body") ?? "" });
    return { status: 201, body: { id: pull.comments.length, body: stringField(body, "body") } };
  }),
  route("GET", `${MRS}/:iid/approvals`, ({ params }, { model }) => {
    const pull = model.find(params.project ?? "", Number(params.iid));
    if (pull === undefined) return notFound("404 Not found");
    const approvedBy = pull.reviews
      .filter((review) => review.state === "approved")
      .map((review) => ({ user: { username: review.user } }));
    return { status: 200, body: { approved: approvedBy.length > 0, approved_by: approvedBy } };
  }),
  route("GET", `${MRS}/:iid/reviewers`, ({ params }, { model }) => {
    const pull = model.find(params.project ?? "", Number(params.iid));
    if (pull === undefined) return notFound("404 Not found");
    const states = {
      approved: "approved",
      changes_requested: "requested_changes",
      commented: "reviewed",
    };
    return {
      status: 200,
      body: pull.reviews.map((review) => ({
        user: { username: review.user },
        state: states[review.state],
      })),
    };
  }),
  route(
    "DELETE",
    "/api/v4/projects/:project/repository/branches/:branch",
    ({ params }, { model }) => {
      const repository = model.repository(params.project ?? "");
      if (repository === undefined) return notFound("404 Project Not Found");
      return model.deleteBranch(repository, params.branch ?? "")
        ? { status: 204 }
        : notFound("404 Branch Not Found");
    },
  ),
];
