import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runGit } from "@deckhand/git";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gitIn } from "../git/temp-repository.ts";
import { FakeCodeHostModel } from "./fake-code-host-model.ts";
import { type GitHttpServer, startGitHttpServer } from "./git-http-backend.ts";

const TOKEN = "git-http-test-token-1234";

describe("startGitHttpServer", () => {
  let root: string;
  let server: GitHttpServer;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "deckhand-git-http-"));
    new FakeCodeHostModel(join(root, "repos")).createRepository("acme/api");
    server = await startGitHttpServer({ projectRoot: join(root, "repos"), token: TOKEN });
  });

  afterAll(async () => {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  });

  function clone(target: string, token: string | undefined) {
    const header =
      token === undefined ? [] : ["-c", `http.extraHeader=Authorization: Bearer ${token}`];
    // Async: the server answers from this same process.
    return runGit([...header, "clone", "--quiet", `${server.url}/acme/api.git`, target], {
      cwd: root,
      allowedExitCodes: [128],
    });
  }

  it("serves a bare repository to a client with the token, through git http-backend", async () => {
    expect((await clone(join(root, "with-token"), TOKEN)).exitCode).toBe(0);
    expect(gitIn(join(root, "with-token"), "log", "--format=%s")).toBe("initial");
    expect(server.requests.some((request) => request.service === "git-upload-pack")).toBe(true);
  });

  it("answers 401 without the token, so nothing is served", async () => {
    const result = await clone(join(root, "without-token"), "not-the-token");
    expect(result.exitCode).toBe(128);
    expect(server.requests.at(-1)?.status).toBe(401);
  });
});
