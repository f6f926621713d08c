// Bitbucket Cloud's API 2.0 for pull requests (under /2.0): exactly what @deckhand/code-hosts
// calls, including the `q=` filter it sends (source and destination branch names).
import type { FakePullRequest } from "./fake-code-host-model.ts";
import {
  type FakeRoute,
  type FakeRouteContext,
  fieldOf,
  notFound,
  route,
  stringField,
} from "./fake-routes.ts";

function renderPull(pull: FakePullRequest, context: FakeRouteContext) {
  return {
    type: "pullrequest",
    id: pull.number,
    title: pull.title,
    summary: { raw: pull.body, markup: "markdown" },
    state: pull.state === "open" ? "OPEN" : pull.state === "merged" ? "MERGED" : "DECLINED",
    draft: pull.draft,
    source: { branch: { name: pull.head }, commit: { hash: pull.headSha } },
    destination: { branch: { name: pull.base } },
    links: { html: { href: `${context.webUrl}/${pull.repository}/pull-requests/${pull.number}` } },
    participants: pull.reviews.map((review) => ({
      type: "participant",
      user: { display_name: review.user },
      role: "REVIEWER",
      approved: review.state === "approved",
      state: review.state === "commented" ? null : review.state,
    })),
  };
}

function repositoryOf(params: Record<string, string>): string {
  return `${params.workspace}/${params.repo}`;
}

/** The value of `field = "value"` in a Bitbucket query, unescaped. */
function queried(q: string, field: string): string | undefined {
  const escaped = field.replace(/\./g, "\\.");
  const match = new RegExp(`${escaped}\\s*=\\s*"((?:[^"\\\\]|\\\\.)*)"`).exec(q);
  return match?.[1]?.replace(/\\(.)/g, "$1");
}

function branchName(body: unknown, side: string): string | undefined {
  return stringField(fieldOf(fieldOf(body, side), "branch"), "name");
}

const PULLS = "/2.0/repositories/:workspace/:repo/pullrequests";
const STATES = { open: "OPEN", merged: "MERGED", closed: "DECLINED" } as const;

export const bitbucketRoutes: FakeRoute[] = [
  route("GET", PULLS, ({ params, query }, context) => {
    const repository = repositoryOf(params);
    if (context.model.repository(repository) === undefined) return notFound();
    const q = query.get("q") ?? "";
    const head = queried(q, "source.branch.name");
    const base = queried(q, "destination.branch.name");
    const states = query.getAll("state");
    const wanted = states.length === 0 ? ["OPEN"] : states;
    const values = context.model.pullRequests
      .filter((pull) => pull.repository === repository)
      .filter((pull) => head === undefined || pull.head === head)
      .filter((pull) => base === undefined || pull.base === base)
      .filter((pull) => wanted.includes(STATES[pull.state]))
      .reverse()
      .map((pull) => renderPull(context.model.refresh(pull), context));
    return { status: 200, body: { values, pagelen: values.length, size: values.length, page: 1 } };
  }),
  route("POST", PULLS, ({ params, body }, context) => {
    const repository = context.model.repository(repositoryOf(params));
    if (repository === undefined) return notFound();
    const head = branchName(body, "source") ?? "";
    const base = branchName(body, "destination") ?? repository.defaultBranch;
    const headSha = context.model.branchSha(repository, head);
    if (headSha === undefined) {
      return {
        status: 400,
        body: { type: "error", error: { message: "source: branch not found" } },
      };
    }
    const title = stringField(body, "title") ?? "";
    const text =
      stringField(fieldOf(body, "summary"), "raw") ?? stringField(body, "description") ?? "";
    // Bitbucket answers a second pull request for the same branches with the open one, updated.
    const open = context.model.openFor(repository.path, head, base);
    if (open !== undefined) {
      open.title = title;
      open.body = text;
      return { status: 200, body: renderPull(open, context) };
    }
    const pull = context.model.create({
      repository: repository.path,
      head,
      base,
      title,
      body: text,
      draft: fieldOf(body, "draft") === true,
      headSha,
    });
    return { status: 201, body: renderPull(pull, context) };
  }),
  route("GET", `${PULLS}/:id`, ({ params }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.id));
    return pull === undefined ? notFound() : { status: 200, body: renderPull(pull, context) };
  }),
  route("PUT", `${PULLS}/:id`, ({ params, body }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.id));
    if (pull === undefined) return notFound();
    const title = stringField(body, "title");
    const text = stringField(fieldOf(body, "summary"), "raw");
    const draft = fieldOf(body, "draft");
    if (title !== undefined) pull.title = title;
    if (text !== undefined) pull.body = text;
    if (typeof draft === "boolean") pull.draft = draft;
    return { status: 200, body: renderPull(context.model.refresh(pull), context) };
  }),
  route("POST", `${PULLS}/:id/decline`, ({ params }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.id));
    if (pull === undefined) return notFound();
    if (pull.state === "open") pull.state = "closed";
    return { status: 200, body: renderPull(pull, context) };
  }),
  route("POST", `${PULLS}/:id/merge`, ({ params }, context) => {
    const pull = context.model.find(repositoryOf(params), Number(params.id));
    if (pull === undefined) return notFound();
    if (pull.state !== "open" || !pull.mergeable) {
      return {
        status: 400,
        body: {
          type: "error",
          error: { message: "You can't merge until you resolve all merge conflicts." },
        },
      };
    }
    pull.state = "merged";
    return { status: 200, body: renderPull(pull, context) };
  }),
  route("POST", `${PULLS}/:id/comments`, ({ params, body }, { model }) => {
    const pull = model.find(repositoryOf(params), Number(params.id));
    if (pull === undefined) return notFound();
    const text = stringField(fieldOf(body, "content"), "raw") ?? "";
    pull.comments.push({ user: "deckhand", body: text });
    return {
      status: 201,
      body: { type: "pullrequest_comment", id: pull.comments.length, content: { raw: text } },
    };
  }),
  route("GET", `${PULLS}/:id/statuses`, ({ params }, { model }) => {
    const pull = model.find(repositoryOf(params), Number(params.id));
    if (pull === undefined) return notFound();
    const checks = model.checksOf(pull);
    const state =
      checks === "passing" ? "SUCCESSFUL" : checks === "failing" ? "FAILED" : "INPROGRESS";
    const values = checks === "none" ? [] : [{ type: "build", key: "ci", state }];
    return { status: 200, body: { values, pagelen: 100, size: values.length, page: 1 } };
  }),
  route(
    "DELETE",
    "/2.0/repositories/:workspace/:repo/refs/branches/:name",
    ({ params }, { model }) => {
      const repository = model.repository(repositoryOf(params));
      if (repository === undefined) return notFound();
      return model.deleteBranch(repository, params.name ?? "") ? { status: 204 } : notFound();
    },
  ),
];
