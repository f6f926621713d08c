import { type FakeCodeHost, type FakeCodeHostType, startFakeCodeHost } from "@deckhand/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CodeHostClient } from "./code-host-client.ts";
import { CodeHostError } from "./code-host-error.ts";
import type { CodeHostConnection } from "./connection.ts";
import { createCodeHostClient } from "./create-client.ts";
import { publishPullRequest } from "./publish-pull-request.ts";

const TYPES: FakeCodeHostType[] = ["github", "gitlab", "bitbucket-cloud", "gitea"];
const TOKEN_ENV = "FAKE_HOST_TOKEN";

/** GitLab nests groups; the other hosts have owner/name. */
function repositoryFor(type: FakeCodeHostType): string {
  return type === "gitlab" ? "acme/platform/api" : "acme/api";
}

function connectionFor(fake: FakeCodeHost): CodeHostConnection {
  return {
    type: fake.type,
    url: fake.url,
    // Bitbucket Cloud's API is not under its web address; the others derive it from `url`.
    ...(fake.type === "bitbucket-cloud" ? { apiUrl: fake.apiUrl } : {}),
    tokenEnv: TOKEN_ENV,
    publishRate: { perMinute: 6_000 },
  };
}

describe.each(TYPES)("the %s client against its fake", (type) => {
  let fake: FakeCodeHost;
  let client: CodeHostClient;
  const repository = repositoryFor(type);
  let branchNumber = 0;

  /** A branch with one commit on it, as a push would leave it. */
  function pushedBranch(): string {
    branchNumber += 1;
    const branch = `batch/change-${branchNumber}`;
    fake.commitToBranch(repository, branch, { [`file-${branchNumber}.txt`]: "changed\n" });
    return branch;
  }

  function publish(head: string, fields: { title?: string; body?: string; draft?: boolean } = {}) {
    return publishPullRequest(client, {
      repository,
      head,
      base: "main",
      title: fields.title ?? "Update the thing",
      body: fields.body ?? "Made by a batch change.",
      draft: fields.draft ?? false,
    });
  }

  beforeAll(async () => {
    fake = await startFakeCodeHost({ type });
    fake.createRepository(repository);
    client = createCodeHostClient(connectionFor(fake), {
      environment: { [TOKEN_ENV]: fake.token },
    });
  });

  afterAll(async () => {
    await fake.close();
  });

  it("creates a pull request once; publishing again finds it by its branch and updates it", async () => {
    const head = pushedBranch();
    const first = await publish(head, { title: "First title" });
    expect(first.action).toBe("created");
    expect(first.pullRequest).toMatchObject({
      title: "First title",
      headBranch: head,
      baseBranch: "main",
      state: "open",
    });
    expect(first.pullRequest.url).toContain(fake.url);

    const again = await publish(head, { title: "Second title", body: "New body" });
    expect(again.action).toBe("updated");
    expect(again.pullRequest.number).toBe(first.pullRequest.number);
    expect(again.pullRequest).toMatchObject({ title: "Second title", body: "New body" });

    const unchanged = await publish(head, { title: "Second title", body: "New body" });
    expect(unchanged.action).toBe("unchanged");
    expect(fake.pullRequests(repository).filter((pull) => pull.head === head)).toHaveLength(1);
    const creates = fake.requestsTo("POST", /\/pullrequests$|\/pulls$|\/merge_requests$/);
    expect(creates.filter((request) => JSON.stringify(request.body).includes(head))).toHaveLength(
      1,
    );
  });

  it("finds a pull request whose create answer was lost instead of opening a second", async () => {
    const head = pushedBranch();
    fake.failNext(
      { status: 502, body: { message: "Bad Gateway" } },
      {
        afterHandling: true,
        when: (request) => request.method === "POST" && JSON.stringify(request.body).includes(head),
      },
    );
    const published = await publish(head);
    expect(published.pullRequest.headBranch).toBe(head);
    expect(fake.pullRequests(repository).filter((pull) => pull.head === head)).toHaveLength(1);
  });

  it("finds nothing for a branch without a pull request", async () => {
    expect(await client.findPullRequest(repository, { head: "no-such-branch", base: "main" })).toBe(
      undefined,
    );
  });

  it("opens a draft, and turns it ready for review and back", async () => {
    const head = pushedBranch();
    const draft = await publish(head, { title: "Draft change", draft: true });
    expect(draft.pullRequest.state).toBe("draft");
    // The title is the spec's: a host's draft marker (GitLab's `Draft:`, Gitea's `WIP:`) is not part of it.
    expect(draft.pullRequest.title).toBe("Draft change");
    expect(fake.pullRequest(repository, draft.pullRequest.number).draft).toBe(true);

    const ready = await publish(head, { title: "Draft change", draft: false });
    expect(ready.action).toBe("updated");
    expect(ready.pullRequest.state).toBe("open");
    expect(fake.pullRequest(repository, draft.pullRequest.number).draft).toBe(false);

    const back = await client.setDraft(repository, ready.pullRequest, true);
    expect(back.state).toBe("draft");
    expect(back.title).toBe("Draft change");
  });

  it("keeps a draft a draft when its title changes", async () => {
    const head = pushedBranch();
    const draft = await publish(head, { title: "Old", draft: true });
    const updated = await client.updatePullRequest(repository, draft.pullRequest.number, {
      title: "New",
    });
    expect(updated).toMatchObject({ title: "New", state: "draft" });
  });

  it("closes a pull request, and publishing reopens it", async () => {
    const head = pushedBranch();
    const published = await publish(head);
    const closed = await client.closePullRequest(repository, published.pullRequest.number);
    expect(closed.state).toBe("closed");
    expect(fake.pullRequest(repository, published.pullRequest.number).state).toBe("closed");

    const reopened = await publish(head);
    expect(reopened.action).toBe("updated");
    expect(reopened.pullRequest.state).toBe("open");
    if (client.capabilities.reopen) {
      expect(reopened.pullRequest.number).toBe(published.pullRequest.number);
    } else {
      // Bitbucket Cloud cannot reopen a declined pull request: a new one takes its place.
      expect(reopened.pullRequest.number).not.toBe(published.pullRequest.number);
      expect(fake.pullRequest(repository, published.pullRequest.number).state).toBe("closed");
    }
  });

  it("comments on a pull request", async () => {
    const published = await publish(pushedBranch());
    await client.comment(repository, published.pullRequest.number, "Rebased on main.");
    expect(fake.pullRequest(repository, published.pullRequest.number).comments).toEqual([
      { user: "deckhand", body: "Rebased on main." },
    ]);
  });

  it("merges a pull request, and reports it merged", async () => {
    const published = await publish(pushedBranch());
    await client.merge(repository, published.pullRequest.number);
    expect(fake.pullRequest(repository, published.pullRequest.number).state).toBe("merged");
    const status = await client.readStatus(repository, published.pullRequest.number);
    expect(status.pullRequest.state).toBe("merged");
    // A merged pull request is left alone when published again.
    expect((await publish(published.pullRequest.headBranch)).action).toBe("unchanged");
  });

  it("reports a pull request the host merged as merged", async () => {
    const published = await publish(pushedBranch());
    fake.merge(repository, published.pullRequest.number);
    const found = await client.findPullRequest(repository, {
      head: published.pullRequest.headBranch,
      base: "main",
    });
    expect(found?.state).toBe("merged");
  });

  it("maps checks, reviews and mergeability for tracking", async () => {
    const published = await publish(pushedBranch());
    const number = published.pullRequest.number;
    let status = await client.readStatus(repository, number);
    expect(status).toMatchObject({ review: "pending", checks: "none" });
    expect(status.pullRequest.headSha).toBe(fake.pullRequest(repository, number).headSha);

    fake.setChecks(repository, number, "pending");
    expect((await client.readStatus(repository, number)).checks).toBe("pending");
    fake.setChecks(repository, number, "failing");
    expect((await client.readStatus(repository, number)).checks).toBe("failing");
    fake.setChecks(repository, number, "passing");
    expect((await client.readStatus(repository, number)).checks).toBe("passing");

    fake.addReview(repository, number, "alice", "approved");
    expect((await client.readStatus(repository, number)).review).toBe("approved");
    fake.addReview(repository, number, "bob", "changes_requested");
    expect((await client.readStatus(repository, number)).review).toBe("changes_requested");

    status = await client.readStatus(repository, number);
    expect(status.mergeable).toBe(client.capabilities.mergeability ? "mergeable" : "unknown");
    fake.setMergeable(repository, number, false);
    status = await client.readStatus(repository, number);
    expect(status.mergeable).toBe(client.capabilities.mergeability ? "conflicting" : "unknown");
  });

  it("deletes a branch; deleting it again is no error", async () => {
    const head = pushedBranch();
    expect(fake.branchSha(repository, head)).toBeDefined();
    await client.deleteBranch(repository, head);
    expect(fake.branchSha(repository, head)).toBeUndefined();
    await client.deleteBranch(repository, head);
  });

  it("says token_missing and sends nothing when the token's variable is unset", async () => {
    const unset = createCodeHostClient(connectionFor(fake), { environment: {} });
    const before = fake.requests.length;
    const error = await unset.getPullRequest(repository, 1).catch((caught: unknown) => caught);
    expect(CodeHostError.isInstance(error) && error.code).toBe("token_missing");
    expect((error as Error).message).toContain(TOKEN_ENV);
    expect(fake.requests.length).toBe(before);
  });

  it("says unauthorized for a refused token, without the token in the message", async () => {
    const wrongToken = "wrong-token-that-is-long-enough";
    const refused = createCodeHostClient(connectionFor(fake), {
      environment: { [TOKEN_ENV]: wrongToken },
    });
    const error = await refused.getPullRequest(repository, 1).catch((caught: unknown) => caught);
    expect(CodeHostError.isInstance(error) && error.code).toBe("unauthorized");
    expect(String((error as Error).message)).not.toContain(wrongToken);
    expect(fake.requests.at(-1)?.authorized).toBe(false);
  });

  it("says not_found for a pull request that does not exist", async () => {
    const error = await client.getPullRequest(repository, 9_999).catch((caught: unknown) => caught);
    expect(CodeHostError.isInstance(error) && error.code).toBe("not_found");
  });
});
