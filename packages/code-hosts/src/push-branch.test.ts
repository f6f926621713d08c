import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { type FakeCodeHost, gitIn, startFakeCodeHost } from "@deckhand/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CodeHostError } from "./code-host-error.ts";
import type { CodeHostConnection } from "./connection.ts";
import { pushBranch } from "./push-branch.ts";

const REPOSITORY = "acme/api";
const TOKEN_ENV = "FAKE_PUSH_TOKEN";

let fake: FakeCodeHost;
let connection: CodeHostConnection;
let environment: Record<string, string>;
let scratch: string;
let local: string;

/** A commit of `file` on top of main in the local clone, on no branch; returns its SHA. */
function localCommit(file: string, content: string, message: string): string {
  gitIn(local, "checkout", "--quiet", "--detach", "origin/main");
  writeFileSync(join(local, file), content);
  gitIn(local, "add", file);
  gitIn(local, "commit", "--quiet", "-m", message);
  return gitIn(local, "rev-parse", "HEAD");
}

function push(
  branch: string,
  commit: string,
  expectedRemoteCommit: string | null,
  env = environment,
) {
  return pushBranch({
    connection,
    repository: REPOSITORY,
    localPath: local,
    commit,
    branch,
    expectedRemoteCommit,
    environment: env,
  });
}

async function rejection(promise: Promise<unknown>): Promise<CodeHostError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!CodeHostError.isInstance(error)) throw new Error(`expected a CodeHostError, got ${error}`);
  return error;
}

beforeAll(async () => {
  fake = await startFakeCodeHost({ type: "github" });
  const repository = fake.createRepository(REPOSITORY);
  connection = { type: "github", url: fake.url, tokenEnv: TOKEN_ENV };
  environment = { [TOKEN_ENV]: fake.token };
  scratch = mkdtempSync(join(tmpdir(), "deckhand-push-"));
  local = join(scratch, "local");
  // A local clone straight from the bare repository: the pushes under test are the only http.
  gitIn(scratch, "clone", "--quiet", repository.gitDirectory, local);
});

afterAll(async () => {
  await fake.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe("pushBranch", () => {
  it("pushes a commit to a new branch over smart HTTP, where the host then has it", async () => {
    const commit = localCommit("new.txt", "new\n", "Add new.txt");
    const result = await push("batch/new", commit, null);
    expect(result).toEqual({ remoteCommit: commit, pushed: true });
    expect(fake.branchSha(REPOSITORY, "batch/new")).toBe(commit);
    expect(
      fake.gitRequests.some(
        (request) => request.service === "git-receive-pack" && request.status === 200,
      ),
    ).toBe(true);
  });

  it("sends nothing when the branch already points at the commit", async () => {
    const commit = localCommit("same.txt", "same\n", "Add same.txt");
    await push("batch/same", commit, null);
    expect(await push("batch/same", commit, commit)).toEqual({
      remoteCommit: commit,
      pushed: false,
    });
  });

  it("replaces its own earlier push when the branch is still where it left it", async () => {
    const first = localCommit("rewrite.txt", "one\n", "First version");
    await push("batch/rewrite", first, null);
    const second = localCommit("rewrite.txt", "two\n", "Second version");
    expect(await push("batch/rewrite", second, first)).toEqual({
      remoteCommit: second,
      pushed: true,
    });
    expect(fake.branchSha(REPOSITORY, "batch/rewrite")).toBe(second);
  });

  it("refuses to overwrite a commit a person pushed, and names it", async () => {
    const ours = localCommit("lease.txt", "ours\n", "Deckhand's change");
    await push("batch/lease", ours, null);
    const theirs = fake.commitToBranch(
      REPOSITORY,
      "batch/lease",
      { "fix.txt": "fix\n" },
      {
        message: "Fix the build by hand",
        author: "jane",
      },
    );
    const rewritten = localCommit("lease.txt", "ours, again\n", "Deckhand's change, again");
    const error = await rejection(push("batch/lease", rewritten, ours));
    expect(error.code).toBe("push_rejected");
    expect(error.remoteCommits).toEqual([
      { sha: theirs, author: "jane <jane@example.com>", subject: "Fix the build by hand" },
    ]);
    expect(error.message).toContain(theirs.slice(0, 12));
    expect(error.message).toContain("Fix the build by hand");
    expect(fake.branchSha(REPOSITORY, "batch/lease")).toBe(theirs);
  });

  it("refuses to take over a branch someone else created", async () => {
    const theirs = fake.commitToBranch(
      REPOSITORY,
      "batch/taken",
      { "theirs.txt": "x\n" },
      {
        message: "Someone else's branch",
        author: "sam",
      },
    );
    const ours = localCommit("taken.txt", "ours\n", "Ours");
    const error = await rejection(push("batch/taken", ours, null));
    expect(error.code).toBe("push_rejected");
    expect(error.remoteCommits.map((commit) => commit.sha)).toEqual([theirs]);
    expect(fake.branchSha(REPOSITORY, "batch/taken")).toBe(theirs);
  });

  it("says token_missing, without running git, when the token's variable is unset", async () => {
    const before = fake.gitRequests.length;
    const error = await rejection(
      push("batch/no-token", localCommit("t.txt", "t\n", "t"), null, {}),
    );
    expect(error.code).toBe("token_missing");
    expect(fake.gitRequests.length).toBe(before);
  });

  it("keeps the token out of git's argv, its trace and the error of a refused push", async () => {
    const bin = join(scratch, "bin");
    const argvLog = join(scratch, "argv.log");
    const traceLog = join(scratch, "trace.log");
    const realGit = gitIn(scratch, "--exec-path");
    // A `git` first on PATH that writes down every command line it is given, then runs git.
    mkdirSync(bin);
    writeFileSync(
      join(bin, "git"),
      `#!/bin/sh\nprintf '%s\\n' "$*" >> "${argvLog}"\nexec "${realGit}/git" "$@"\n`,
    );
    chmodSync(join(bin, "git"), 0o755);
    const saved = { PATH: process.env.PATH, GIT_TRACE: process.env.GIT_TRACE };
    process.env.PATH = `${bin}${delimiter}${process.env.PATH ?? ""}`;
    process.env.GIT_TRACE = traceLog;
    const wrongToken = "a-wrong-token-for-this-host";
    let refused: CodeHostError;
    try {
      const commit = localCommit("traced.txt", "traced\n", "Traced");
      await push("batch/traced", commit, null);
      refused = await rejection(
        push("batch/traced-refused", commit, null, { [TOKEN_ENV]: wrongToken }),
      );
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.GIT_TRACE === undefined) delete process.env.GIT_TRACE;
      else process.env.GIT_TRACE = saved.GIT_TRACE;
    }
    expect(refused.code).toBe("unauthorized");
    expect(refused.message).toContain(TOKEN_ENV);
    const argv = readFileSync(argvLog, "utf8");
    const trace = readFileSync(traceLog, "utf8");
    expect(argv).toContain("push --porcelain");
    expect(trace).toContain("remote-http");
    const secrets = [fake.token, wrongToken];
    for (const secret of secrets) {
      const encoded = Buffer.from(`x-access-token:${secret}`).toString("base64");
      for (const text of [argv, trace, refused.message, refused.stack ?? ""]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(encoded);
      }
    }
  });
});
