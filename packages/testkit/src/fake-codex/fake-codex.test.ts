import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WireHeader } from "@deckhand/wire";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type FakeModel, startFakeModel } from "../fake-model/fake-model-server.ts";
import { turn } from "../fake-model/fake-turn.ts";
import {
  type FakeCodexRelease,
  fakeCodexDirective,
  startFakeCodexRelease,
} from "./fake-codex-release.ts";

const VERSION = "0.0.1-fake";
const TOKEN = "dh_mpt_fake-codex-test-token";
const TARGET = "codex-x86_64-unknown-linux-musl";

let release: FakeCodexRelease;
let fake: FakeModel;
let scratch: string;
let codex: string;

beforeAll(async () => {
  release = await startFakeCodexRelease({ version: VERSION });
  fake = await startFakeModel();
  scratch = mkdtempSync(join(tmpdir(), "deckhand-fake-codex-test-"));
  // Fetch and unpack the archive as the renderer's install lines do.
  const response = await fetch(`${release.baseUrl}/rust-v${VERSION}/${TARGET}.tar.gz`);
  expect(response.status).toBe(200);
  writeFileSync(join(scratch, "codex.tar.gz"), Buffer.from(await response.arrayBuffer()));
  mkdirSync(join(scratch, "package"));
  const untar = spawnSync("tar", ["-xzf", join(scratch, "codex.tar.gz"), "-C", "package"], {
    cwd: scratch,
  });
  expect(untar.status).toBe(0);
  codex = join(scratch, "package", TARGET);
});

afterAll(async () => {
  await release.close();
  await fake.close();
  rmSync(scratch, { recursive: true, force: true });
});

beforeEach(() => fake.reset());

/** Runs `codex exec` as the renderer does; asynchronously, since the fake model is in-process. */
async function exec(prompt: string, env: Record<string, string> = {}, cwd = scratch) {
  const child = spawn(
    codex,
    [
      "exec",
      "--json",
      "--skip-git-repo-check",
      "--ephemeral",
      "--dangerously-bypass-approvals-and-sandbox",
      "-c",
      "analytics.enabled=false",
      "--disable",
      "plugins",
      "-c",
      'model_provider="deckhand"',
      "-c",
      `model_providers.deckhand.base_url="${fake.url}/v1"`,
      "-c",
      'model_providers.deckhand.env_key="MY_TOKEN"',
      "-c",
      `model_providers.deckhand.env_http_headers={"${WireHeader.jobId}"="MY_JOB"}`,
      "-c",
      'model="gpt-5-codex"',
      "--",
      prompt,
    ],
    {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH, MY_TOKEN: TOKEN, MY_JOB: "job-7", ...env },
    },
  );
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (data: Buffer) => {
    stdout += data.toString("utf8");
  });
  child.stderr.on("data", (data: Buffer) => {
    stderr += data.toString("utf8");
  });
  const status = await new Promise<number | null>((resolveExit) =>
    child.on("close", (code) => resolveExit(code)),
  );
  const events = stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as { type: string });
  return { status, stderr, events };
}

describe("the fake Codex CLI", () => {
  it("is served as a release archive and prints codex's version line", () => {
    expect(release.requests).toEqual([`/rust-v${VERSION}/${TARGET}.tar.gz`]);
    const version = spawnSync(codex, ["--version"], { encoding: "utf8" });
    expect(version.stdout).toBe(`codex-cli ${VERSION}\n`);
  });

  it("sends the prompt to <base_url>/responses with the token and job header, and writes what the model says", async () => {
    const workdir = join(scratch, "work");
    mkdirSync(workdir, { recursive: true });
    fake.script([
      turn.text(`${fakeCodexDirective.write("src/hello.txt", "hello\nthere\n")}\nDone.`),
    ]);
    const result = await exec("add hello", {}, workdir);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(readFileSync(join(workdir, "src/hello.txt"), "utf8")).toBe("hello\nthere\n");
    expect(result.events.map((event) => event.type)).toEqual([
      "thread.started",
      "turn.started",
      "item.completed",
      "item.completed",
      "turn.completed",
    ]);
    const [request] = fake.requests;
    expect(request).toMatchObject({ method: "POST", path: "/v1/responses" });
    expect(request!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(request!.headers[WireHeader.jobId.toLowerCase()]).toBe("job-7");
    expect(request!.json).toMatchObject({ model: "gpt-5-codex", stream: true });
    expect(JSON.stringify(request!.json)).toContain("add hello");
  });

  it("fails without its token, on a model error, on a fail directive and outside its directory", async () => {
    expect(await exec("x", { MY_TOKEN: "" })).toMatchObject({
      status: 1,
      stderr: expect.stringContaining("MY_TOKEN is not set"),
    });
    fake.script([turn.fail({ status: 401, message: "bad token" })]);
    expect(await exec("x")).toMatchObject({ status: 1, stderr: expect.stringContaining("401") });
    fake.script([turn.text(fakeCodexDirective.fail("the tests do not pass"))]);
    const failed = await exec("x");
    expect(failed).toMatchObject({
      status: 1,
      stderr: "fake codex: the tests do not pass\n",
    });
    expect(failed.events.map((event) => event.type)).toContain("turn.failed");
    fake.script([turn.text(fakeCodexDirective.write("../escape.txt", "no"))]);
    expect(await exec("x")).toMatchObject({
      status: 1,
      stderr: expect.stringContaining("outside"),
    });
  });

  it("prints its token only when asked to, as a careless agent would", async () => {
    fake.script([turn.text("ok")]);
    expect((await exec("x", { FAKE_CODEX_PRINT_TOKEN: "1" })).stderr).toContain(TOKEN);
  });

  it("writes the request it sends, token and job header included, to a file only when asked to", async () => {
    fake.script([turn.text("ok"), turn.text("ok")]);
    const record = join(scratch, "request.json");
    expect((await exec("x", { FAKE_CODEX_RECORD_REQUEST: record })).status).toBe(0);
    const recorded = JSON.parse(readFileSync(record, "utf8")) as {
      url: string;
      headers: Record<string, string>;
    };
    expect(recorded.url).toBe(`${fake.url}/v1/responses`);
    expect(recorded.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      [WireHeader.jobId]: "job-7",
    });
    rmSync(record);
    expect((await exec("x")).stderr).toBe("");
    expect(existsSync(record)).toBe(false);
  });
});
