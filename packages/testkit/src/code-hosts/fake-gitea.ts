// Gitea's (and Forgejo's) API v1 for pull requests: exactly what @deckhand/code-hosts calls
// through gitea-js. As on Gitea, a `WIP:` or `[WIP]` title prefix is what makes a draft.
import type { FakePullRequest } from "./fake-code-host-model.ts";
import {
  type FakeRoute,
  type FakeRouteContext,
  notFound,
  route,
  stringField,
} from "./fake-routes.ts";

const DRAFT = /^\s*(?:wip:|\[wip\])/i;

function renderPull(pull: FakePullRequest, context: FakeRouteContext) {
  const [owner = ""] = pull.repository.split("/");
  return {
    id: pull.id,
    number: pull.number,
    html_url: `${context.webUrl}/${pull.repository}/pulls/${pull.number}`,
    title: pull.title,
    body: pull.body,
    state: pull.state === "open" ? "open" : "closed",
    merged: pull.state === "merged",
    draft: pull.draft,
    // As Gitea: a work-in-progress pull request is never mergeable.
    mergeable: pull.state === "open" && pull.mergeable && !pull.draft,
    head: {
      ref: pull.head,
      sha: pull.headSha,
      label: pull.head,
      repo: { full_name: pull.repository },
    },
    base: { ref: pull.base, label: pull.base, repo: { full_name: pull.repository } },
    user: { login: owner },
  };
}

function repositoryOf(params: Record<string, string>): string {
  return `${params.owner}/${params.repo}`;
}

const PULLS = "/api/v1/repos/:owner/:repo/pulls";

export const giteaRoutes: FakeRoute[] = [
  route("POST", PULLS, ({ params, body }, context) => {
    const repository = context.model.repository(repositoryOf(params));
    if (repository === undefined) return notFound("repository does not exist");
    const head = stringField(body, "head") ?? "";
    const base = stringField(body, "base") ?? "";
    const headSha = context.model.branchSha(repository, head);
    if (headSha === undefined || context.model.branchSha(repository, base) === undefined) {
      return notFound("branch does not exist");
    }
    if (context.model.openFor(repository.path, head, base) !== undefined) {
      return { status: 409, body: { message: "pull request already exists for these targets" } };
    }
    const title = stringField(body, "title") ?? "";
    const pull = context.model.create({
      repository: repository.path,
      head,
      base,
      title,
      body: stringField(body, "body") ?? "",
      draft: DRAFT.test(title),
      headSha,
    });
    return { status: 201, body: renderPull(pull, context) };
  }),
  route("GET", `${PULLS}/:index`, ({ params }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.index));
    return pull === undefined ? notFound() : { status: 200, body: renderPull(pull, context) };
  }),
  route("PATCH", `${PULLS}/:index`, ({ params, body }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.index));
    if (pull === undefined) return notFound();
    const title = stringField(body, "title");
    const text = stringField(body, "body");
    const state = stringField(body, "state");
    if (title !== undefined) {
      pull.title = title;
      pull.draft = DRAFT.test(title);
    }
    if (text !== undefined) pull.body = text;
    if (state !== undefined && pull.state !== "merged")
      pull.state = state === "closed" ? "closed" : "open";
    return { status: 201, body: renderPull(context.model.refresh(pull), context) };
  }),
  route("POST", `${PULLS}/:index/merge`, ({ params, body }, { model }) => {
    const pull = model.find(repositoryOf(params), Number(params.index));
    if (pull === undefined) return notFound();
    if (pull.state !== "open" || pull.draft || !pull.mergeable) {
      return { status: 405, body: { message: "Please try again later" } };
    }
    const sha = stringField(body, "head_commit_id");
    if (sha !== undefined && sha !== pull.headSha) {
      return { status: 409, body: { message: "head out of date" } };
    }
    pull.state = "merged";
    return { status: 200 };
  }),
  route("GET", `${PULLS}/:index/reviews`, ({ params }, { model }) => {
    const pull = model.find(repositoryOf(params), Number(params.index));
    if (pull === undefined) return notFound();
    const states = {
      approved: "APPROVED",
      changes_requested: "REQUEST_CHANGES",
      commented: "COMMENT",
    };
    return {
      status: 200,
      body: pull.reviews.map((review, index) => ({
        id: index + 1,
        user: { login: review.user },
        state: states[review.state],
        dismissed: false,
        stale: false,
      })),
    };
  }),
  // After the routes above: Gitea routes `pulls/{base}/*` (head may hold slashes) the same way.
  route("GET", `${PULLS}/:base/*head`, ({ params }, context) => {
    const [pull] = context.model.findByBranches(
      repositoryOf(params),
      params.head ?? "",
      params.base,
    );
    return pull === undefined ? notFound() : { status: 200, body: renderPull(pull, context) };
  }),
  route(
    "POST",
    "/api/v1/repos/:owner/:repo/issues/:index/comments",
    ({ params, body }, { model }) => {
      const pull = model.find(repositoryOf(params), Number(params.index));
      if (pull === undefined) return notFound();
      pull.comments.push({ user: "deckhand", body: stringField(body, "body") ?? "" });
      return { status: 201, body: { id: pull.comments.length, body: stringField(body, "body") } };
    },
  ),
  route("DELETE", "/api/v1/repos/:owner/:repo/branches/*branch", ({ params }, { model }) => {
    const repository = model.repository(repositoryOf(params));
    if (repository === undefined) return notFound();
    return model.deleteBranch(repository, params.branch ?? "")
      ? { status: 204 }
      : notFound("branch does not exist");
  }),
  route("GET", "/api/v1/repos/:owner/:repo/commits/:ref/status", ({ params }, { model }) => {
    const checks = model.checks.get(params.ref ?? "") ?? "none";
    const state =
      checks === "passing"
        ? "success"
        : checks === "failing"
          ? "failure"
          : checks === "pending"
            ? "pending"
            : "";
    const statuses = checks === "none" ? [] : [{ id: 1, context: "ci/fake", status: state }];
    return {
      status: 200,
      body: { state, sha: params.ref, total_count: statuses.length, statuses },
    };
  }),
];
