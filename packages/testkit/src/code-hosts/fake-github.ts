// GitHub's REST API (under /api/v3, as GitHub Enterprise serves it) and the two GraphQL
// mutations that change a pull request's draft state: exactly what @deckhand/code-hosts calls.
import type { FakePullRequest } from "./fake-code-host-model.ts";
import {
  type FakeAnswer,
  type FakeRoute,
  type FakeRouteContext,
  fieldOf,
  notFound,
  route,
  stringField,
} from "./fake-routes.ts";

function nodeId(pull: FakePullRequest): string {
  return `PR_fake${pull.id}`;
}

function renderPull(pull: FakePullRequest, context: FakeRouteContext) {
  const [owner = ""] = pull.repository.split("/");
  const merged = pull.state === "merged";
  return {
    id: pull.id,
    node_id: nodeId(pull),
    number: pull.number,
    html_url: `${context.webUrl}/${pull.repository}/pull/${pull.number}`,
    title: pull.title,
    body: pull.body,
    state: pull.state === "open" ? "open" : "closed",
    draft: pull.draft,
    merged,
    merged_at: merged ? new Date().toISOString() : null,
    mergeable: pull.state === "open" ? pull.mergeable : null,
    mergeable_state: pull.state !== "open" ? "unknown" : pull.mergeable ? "clean" : "dirty",
    head: { ref: pull.head, sha: pull.headSha, label: `${owner}:${pull.head}` },
    base: { ref: pull.base, label: `${owner}:${pull.base}` },
    user: { login: "deckhand" },
    created_at: pull.createdAt,
  };
}

function repositoryOf(params: Record<string, string>): string {
  return `${params.owner}/${params.repo}`;
}

function validation(message: string): FakeAnswer {
  return {
    status: 422,
    body: {
      message: "Validation Failed",
      errors: [{ resource: "PullRequest", code: "custom", message }],
    },
  };
}

const PULLS = "/api/v3/repos/:owner/:repo/pulls";

export const githubRoutes: FakeRoute[] = [
  route("GET", PULLS, ({ params, query }, { model, webUrl }) => {
    const repository = repositoryOf(params);
    if (model.repository(repository) === undefined) return notFound();
    const headFilter = query.get("head") ?? "";
    const head = headFilter.includes(":")
      ? headFilter.slice(headFilter.indexOf(":") + 1)
      : headFilter;
    const base = query.get("base") ?? undefined;
    const state = query.get("state") ?? "open";
    const pulls = model.pullRequests
      .filter((pull) => pull.repository === repository)
      .filter((pull) => head === "" || pull.head === head)
      .filter((pull) => base === undefined || pull.base === base)
      .filter(
        (pull) =>
          state === "all" || (state === "open" ? pull.state === "open" : pull.state !== "open"),
      )
      .reverse()
      .map((pull) => renderPull(model.refresh(pull), { model, webUrl }));
    return { status: 200, body: pulls };
  }),
  route("POST", PULLS, ({ params, body }, context) => {
    const repository = context.model.repository(repositoryOf(params));
    if (repository === undefined) return notFound();
    const head = stringField(body, "head") ?? "";
    const base = stringField(body, "base") ?? "";
    const headSha = context.model.branchSha(repository, head);
    if (headSha === undefined) {
      return {
        status: 422,
        body: {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", field: "head", code: "invalid" }],
        },
      };
    }
    if (context.model.branchSha(repository, base) === undefined) {
      return {
        status: 422,
        body: {
          message: "Validation Failed",
          errors: [{ resource: "PullRequest", field: "base", code: "invalid" }],
        },
      };
    }
    if (context.model.openFor(repository.path, head, base) !== undefined) {
      return validation(`A pull request already exists for ${params.owner}:${head}.`);
    }
    const pull = context.model.create({
      repository: repository.path,
      head,
      base,
      title: stringField(body, "title") ?? "",
      body: stringField(body, "body") ?? "",
      draft: fieldOf(body, "draft") === true,
      headSha,
    });
    return { status: 201, body: renderPull(pull, context) };
  }),
  route("GET", `${PULLS}/:number`, ({ params }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.number));
    return pull === undefined ? notFound() : { status: 200, body: renderPull(pull, context) };
  }),
  route("PATCH", `${PULLS}/:number`, ({ params, body }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.number));
    if (pull === undefined) return notFound();
    const title = stringField(body, "title");
    const text = stringField(body, "body");
    const state = stringField(body, "state");
    if (title !== undefined) pull.title = title;
    if (text !== undefined) pull.body = text;
    if (state !== undefined && pull.state !== "merged") {
      if (state === "open" && context.model.openFor(pull.repository, pull.head, pull.base)) {
        return validation(`A pull request already exists for ${pull.head}.`);
      }
      pull.state = state === "closed" ? "closed" : "open";
    }
    return { status: 200, body: renderPull(context.model.refresh(pull), context) };
  }),
  route("PUT", `${PULLS}/:number/merge`, ({ params, body }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.number));
    if (pull === undefined) return notFound();
    if (pull.state !== "open" || pull.draft || !pull.mergeable) {
      return { status: 405, body: { message: "Pull Request is not mergeable" } };
    }
    const sha = stringField(body, "sha");
    if (sha !== undefined && sha !== pull.headSha) {
      return {
        status: 409,
        body: { message: "Head branch was modified. Review and try the merge again." },
      };
    }
    pull.state = "merged";
    return {
      status: 200,
      body: { sha: pull.headSha, merged: true, message: "Pull Request successfully merged" },
    };
  }),
  route("GET", `${PULLS}/:number/reviews`, ({ params }, { model }) => {
    const pull = model.find(repositoryOf(params), Number(params.number));
    if (pull === undefined) return notFound();
    const states = {
      approved: "APPROVED",
      changes_requested: "CHANGES_REQUESTED",
      commented: "COMMENTED",
    };
    return {
      status: 200,
      body: pull.reviews.map((review, index) => ({
        id: index + 1,
        user: { login: review.user },
        state: states[review.state],
      })),
    };
  }),
  route(
    "POST",
    "/api/v3/repos/:owner/:repo/issues/:number/comments",
    ({ params, body }, { model }) => {
      const pull = model.find(repositoryOf(params), Number(params.number));
      if (pull === undefined) return notFound();
      pull.comments.push({ user: "deckhand", body: stringField(body, "body") ?? "" });
      return { status: 201, body: { id: pull.comments.length, body: stringField(body, "body") } };
    },
  ),
  route("DELETE", "/api/v3/repos/:owner/:repo/git/refs/*ref", ({ params }, { model }) => {
    const repository = model.repository(repositoryOf(params));
    if (repository === undefined) return notFound();
    const ref = params.ref ?? "";
    const branch = ref.startsWith("heads/") ? ref.slice("heads/".length) : ref;
    if (!model.deleteBranch(repository, branch)) {
      return { status: 422, body: { message: "Reference does not exist" } };
    }
    return { status: 204 };
  }),
  route("GET", "/api/v3/repos/:owner/:repo/commits/:ref/check-runs", ({ params }, { model }) => {
    const checks = model.checks.get(params.ref ?? "") ?? "none";
    const runs =
      checks === "none"
        ? []
        : [
            {
              id: 1,
              name: "build",
              status: checks === "pending" ? "in_progress" : "completed",
              conclusion:
                checks === "pending" ? null : checks === "passing" ? "success" : "failure",
            },
          ];
    return { status: 200, body: { total_count: runs.length, check_runs: runs } };
  }),
  route("GET", "/api/v3/repos/:owner/:repo/commits/:ref/status", ({ params }, { model }) => {
    const checks = model.checks.get(params.ref ?? "") ?? "none";
    const state = checks === "passing" ? "success" : checks === "failing" ? "failure" : "pending";
    const statuses = checks === "none" ? [] : [{ context: "ci/fake", state }];
    return {
      status: 200,
      body: { state, total_count: statuses.length, statuses, sha: params.ref },
    };
  }),
  route("POST", "/api/graphql", ({ body }, context) => {
    const query = stringField(body, "query") ?? "";
    const id = stringField(fieldOf(body, "variables"), "id");
    const pull = context.model.pullRequests.find((candidate) => nodeId(candidate) === id);
    if (pull === undefined) {
      return {
        status: 200,
        body: {
          data: null,
          errors: [
            {
              type: "NOT_FOUND",
              message: `Could not resolve to a node with the global id of '${id}'`,
            },
          ],
        },
      };
    }
    if (query.includes("convertPullRequestToDraft")) pull.draft = true;
    else if (query.includes("markPullRequestReadyForReview")) pull.draft = false;
    else
      return {
        status: 200,
        body: { data: null, errors: [{ message: "the fake knows two mutations" }] },
      };
    const field = pull.draft ? "convertPullRequestToDraft" : "markPullRequestReadyForReview";
    return { status: 200, body: { data: { [field]: { pullRequest: { id } } } } };
  }),
];
