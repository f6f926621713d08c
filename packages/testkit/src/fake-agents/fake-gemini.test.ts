// The fake Gemini CLI answers the way Gemini CLI 0.61 does (checked against the real one): the
// entry file alone cannot start, the base URL alone selects an auth type headless mode refuses
// (exit 41), an untrusted folder stops it (exit 55), and with API-key auth, trust and usage
// statistics off it streams its request with the key in `x-goog-api-key` and no installation id.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WireHeader } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModel, startFakeModel } from "../fake-model/fake-model-server.ts";
import { turn } from "../fake-model/fake-turn.ts";
import { fakeGeminiBundle } from "./fake-gemini-release.ts";

const VERSION = "0.61.0";
let scratch: string;
let fake: FakeModel;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), "deckhand-fake-gemini-test-"));
  mkdirSync(join(scratch, "bundle"));
  mkdirSync(join(scratch, "entry-only"));
  for (const [path, file] of fakeGeminiBundle(VERSION)) {
    writeFileSync(join(scratch, "bundle", path), file.content);
    chmodSync(join(scratch, "bundle", path), file.mode ?? 0o644);
    if (path === "gemini.js") writeFileSync(join(scratch, "entry-only", path), file.content);
  }
  fake = await startFakeModel();
});
afterAll(async () => {
  await fake.close();
  rmSync(scratch, { recursive: true, force: true });
});

/**
 * Runs the fake in a fresh working directory with a home of its own; asynchronously, since the
 * fake model it talks to answers from this process.
 */
function gemini(
  args: string[],
  env: Record<string, string>,
  directory = "bundle",
): Promise<{ status: number | null; stdout: string; stderr: string; home: string }> {
  const home = mkdtempSync(join(scratch, "home-"));
  const cwd = mkdtempSync(join(scratch, "work-"));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(scratch, directory, "gemini.js"), ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? "", HOME: home, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr, home }));
  });
}

function settings(home: string, value: object): void {
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(join(home, ".gemini", "settings.json"), JSON.stringify(value));
}

describe("the fake Gemini CLI", () => {
  it("cannot start from the entry file alone: the bundle is code-split", async () => {
    const result = await gemini(["--version"], {}, "entry-only");
    expect(result.status).toBe(1);
    expect(result.stderr).toContain("Cannot find module './chunk-FAKE.js'");
    expect((await gemini(["--version"], {})).stdout).toBe(`${VERSION}\n`);
  });

  it("refuses the auth type GOOGLE_GEMINI_BASE_URL selects, with exit 41", async () => {
    const result = await gemini(["--skip-trust", "--prompt=hi"], {
      GOOGLE_GEMINI_BASE_URL: fake.url,
      GEMINI_API_KEY: "key",
    });
    expect(result.status).toBe(41);
    expect(result.stderr).toContain("Invalid auth method selected.");
  });

  it("stops in an untrusted folder with exit 55", async () => {
    const home = mkdtempSync(join(scratch, "state-"));
    settings(home, { security: { auth: { selectedType: "gemini-api-key" } } });
    const result = await gemini(["--prompt=hi"], {
      GEMINI_CLI_HOME: home,
      GOOGLE_GEMINI_BASE_URL: fake.url,
      GEMINI_API_KEY: "key",
    });
    expect(result.status).toBe(55);
    expect(result.stderr).toContain("--skip-trust");
  });

  it("streams generateContent with API-key auth, and adds its installation id while usage statistics are on", async () => {
    fake.reset();
    fake.script([turn.text("Hello."), turn.text("Hello again.")]);
    const state = mkdtempSync(join(scratch, "state-"));
    settings(state, { security: { auth: { selectedType: "gemini-api-key" } } });
    const env = {
      GEMINI_CLI_HOME: state,
      GOOGLE_GEMINI_BASE_URL: fake.url,
      GEMINI_API_KEY: "the-key",
      GEMINI_CLI_CUSTOM_HEADERS: "Deckhand-Job-Id: job-7",
    };
    const args = [
      "--skip-trust",
      "--model=gemini-2.5-pro",
      "--output-format=stream-json",
      "--prompt=hi",
    ];
    const first = await gemini(args, env);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain('"type":"result","status":"success"');
    const [request] = fake.requests;
    expect(request!.url).toBe("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
    expect(request!.headers["x-goog-api-key"]).toBe("the-key");
    expect(request!.headers[WireHeader.jobId.toLowerCase()]).toBe("job-7");
    expect(request!.headers["x-gemini-api-privileged-user-id"]).toEqual(expect.any(String));
    // Its home is GEMINI_CLI_HOME, never HOME.
    expect(existsSync(join(first.home, ".gemini"))).toBe(false);

    settings(state, {
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
    });
    const second = await gemini(args, env);
    expect(second.status, second.stderr).toBe(0);
    expect(fake.requests[1]!.headers["x-gemini-api-privileged-user-id"]).toBeUndefined();
  });
});
