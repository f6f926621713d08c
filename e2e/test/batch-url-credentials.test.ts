// "Credentials that leak today": a code host given as a git URL with a password. `deckhand up`
// as its own process clones it over real http (git http-backend behind Basic auth on loopback),
// runs steps that print the git configuration their checkout sees (the mirror's, which container
// steps get mounted read-only), and applies the changeset, which pushes over http again. The
// password must be sent with every git command that reaches the host, and found nowhere else:
// not in the mirror's config, not in a step's output, not in an API answer, a stream frame, a
// log line, a database row or any file of the data directory (but config.json, where the
// operator wrote it).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { containerTestSetup } from "@deckhand/container-runtime/test-support";
import {
  createTempRepository,
  type GitHttpServer,
  gitIn,
  startGitHttpServer,
} from "@deckhand/testkit";
import { type BatchStepDetail, type BatchWorkspace, ServerPath, serverPath } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BatchServer, databaseBackends, startBatchServer } from "./batch-server.ts";

const setup = await containerTestSetup();

const NAME = "git.example/acme/api";
const USER = "deckhand";
// Characters a URL must percent-encode, so that every spelling of it is hunted for.
const PASSWORD = "pa ss/w@rd-e2e-41d9c7";
const WRITTEN = encodeURIComponent(PASSWORD);
const HEADER = Buffer.from(`${USER}:${PASSWORD}`).toString("base64");
const FORMS = [PASSWORD, WRITTEN, HEADER];

const spec = (image: string, script: string) => `
name: url-credentials
on:
  - repository: ${NAME}
steps:
  - run: ${JSON.stringify(script)}
    container: ${image}
changesetTemplate:
  title: Credentials
  body: Printed the git configuration
  branch: url-credentials
  commit:
    message: Credentials
`;

/** What a local step runs: git's view of the checkout's configuration, and the mirror's file. */
const LOCAL_SCRIPT = [
  "git config -l",
  'cat "$(git rev-parse --git-common-dir)/config"',
  "echo hello > HELLO.md",
].join("\n");

/** busybox has no git: the mirror's config is found through the worktree's .git file. */
const CONTAINER_SCRIPT = [
  "gitdir=$(sed -n 's/^gitdir: //p' .git)",
  'cat "$gitdir/$(cat "$gitdir/commondir")/config"',
  "echo hello > HELLO.md",
].join("\n");

function leaks(text: string): string[] {
  return FORMS.filter((form) => text.includes(form));
}

describe("a git URL code host with a password, through deckhand up", () => {
  let served: string;
  let bare: string;
  let host: GitHttpServer;
  let deckhand: BatchServer;
  /** The URL as git may store it: without the password. */
  let storedUrl: string;

  beforeAll(async () => {
    served = mkdtempSync(join(tmpdir(), "deckhand-e2e-served-"));
    const source = createTempRepository({ "README.md": "# api\n" });
    bare = join(served, "acme/api.git");
    gitIn(source.path, "clone", "--bare", "--quiet", source.path, bare);
    source.remove();
    host = await startGitHttpServer({ projectRoot: served, token: PASSWORD });
    storedUrl = `${host.url.replace("://", `://${USER}@`)}/acme/api.git`;
    deckhand = await startBatchServer({
      backend: databaseBackends.at(-1)!,
      config: {
        workspaceAgent: false,
        codeHosts: [
          {
            type: "git",
            url: `${host.url.replace("://", `://${USER}:${WRITTEN}@`)}/acme/api.git`,
            name: NAME,
          },
        ],
        batchConcurrency: 1,
        containerRuntime: { restrictedHost: true },
      },
    });
  });

  afterAll(async () => {
    await deckhand?.close();
    await host?.close();
    if (served) rmSync(served, { recursive: true, force: true });
  });

  async function stepOutput(runId: string): Promise<BatchStepDetail> {
    const [workspace] = (
      await deckhand.api<{ workspaces: BatchWorkspace[] }>(
        "GET",
        serverPath(ServerPath.batchRunWorkspaces, { batch_run_id: runId }),
      )
    ).body.workspaces;
    expect(workspace).toMatchObject({ repository: NAME, state: "completed", error: null });
    return (
      await deckhand.api<BatchStepDetail>(
        "GET",
        serverPath(ServerPath.batchWorkspaceStep, { workspace_id: workspace!.id, step_index: "0" }),
      )
    ).body;
  }

  it("clones, fetches and pushes with the password, and a step sees a config without it", async () => {
    const { run } = await deckhand.runToEnd(
      {
        source: spec("alpine:3", LOCAL_SCRIPT),
        file: "credentials.yaml",
        action: "apply",
        options: { runtime: "local" },
      },
      100_000,
    );
    expect(run.error).toBeNull();
    expect(run.status).toBe("completed");
    const detail = await stepOutput(run.id);
    // What the step printed is the URL without the password, and no form of the password.
    expect(detail.stdout).toContain(`remote.origin.url=${storedUrl}`);
    expect(detail.stdout).toContain(`url = ${storedUrl}`);
    expect(leaks(`${detail.stdout}${detail.stderr}`)).toEqual([]);
    // The apply pushed the branch over http: the password went with that command too.
    expect(gitIn(bare, "log", "-1", "--format=%s", "refs/heads/url-credentials")).toBe(
      "Credentials",
    );
    // Every request reached the host with the password: none was refused on the way.
    expect(host.requests.filter((request) => request.status !== 200)).toEqual([]);
    expect(host.requests.some((request) => request.service === "git-receive-pack")).toBe(true);
  }, 120_000);

  it.skipIf(setup.runtime === null)(
    "a container step, with the mirror mounted read-only, reads a config without the password",
    async () => {
      const { run } = await deckhand.runToEnd(
        {
          source: spec(setup.image, CONTAINER_SCRIPT),
          file: "credentials.yaml",
          options: { runtime: "container", clear_cache: true },
        },
        100_000,
      );
      expect(run.error).toBeNull();
      expect(run.status).toBe("completed");
      const detail = await stepOutput(run.id);
      expect(detail.step).toMatchObject({ runtime: "container", image: setup.image });
      expect(detail.stdout).toContain(`url = ${storedUrl}`);
      expect(leaks(`${detail.stdout}${detail.stderr}`)).toEqual([]);
    },
    120_000,
  );

  it("leaves the password in no answer, frame, log line, row or file of the data directory", async () => {
    await deckhand.stop();
    const places: Record<string, string> = {
      responses: deckhand.responses.join("\n"),
      frames: deckhand.streams.flatMap((stream) => stream.raw).join("\n"),
      logs: deckhand.server.output.join("\n"),
      database: await deckhand.dumpDatabase(),
    };
    for (const [place, text] of Object.entries(places)) {
      expect({ place, leaks: leaks(text) }).toEqual({ place, leaks: [] });
    }
    // The embedded database's files, the mirror, checkouts and logs: bytes, not just rows.
    const files = readdirSync(deckhand.dataDir, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name))
      .filter((file) => file !== join(deckhand.dataDir, "config.json"));
    expect(files.length).toBeGreaterThan(10);
    const holding = files.filter((file) => {
      const bytes = readFileSync(file);
      return FORMS.some((form) => bytes.includes(form));
    });
    expect(holding).toEqual([]);
  });
});
