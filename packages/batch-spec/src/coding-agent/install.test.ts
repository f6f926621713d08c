import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WireEnv } from "@deckhand/wire";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { codexArguments } from "./agents/codex.ts";
import { type RenderCodingAgentStepInput, renderCodingAgentStep } from "./render.ts";

/**
 * Runs rendered scripts for real: /bin/sh, curl and tar against a release server on loopback
 * serving archives built here, with a fake `codex` that records what it was given.
 */

const VERSION = "0.169.0";
const TARGET = "x86_64-unknown-linux-musl";
const ASSET_PATH = `/releases/rust-v${VERSION}/codex-${TARGET}.tar.gz`;
const TOKEN = "tok-0123456789abcdef";
const JOB_ID = "job-42";
const IMAGE = "example.com/agents:1";
const PROMPT =
  'Rename `foo` → bar; don\'t touch $HOME, $(id) or "quotes".\n# keep this line\n\\ ! * 日本語 ';

let root: string;
let server: Server;
let serverUrl: string;
/**
 * What the release server answers: the archive, the first half of it and a dropped connection,
 * or the archive once the test lets go of it (`letGo`).
 */
let mode: "ok" | "truncate" | "hold" = "ok";
/** Answers the server holds back in "hold" mode. */
let held: (() => void)[] = [];
function letGo(): void {
  for (const answer of held.splice(0)) answer();
}
let archive: Buffer;
let requests = 0;
const children = new Set<ChildProcess>();

/** A fake codex: `--version` prints `versionLine`; a run records args, credentials and stdin. */
function fakeCodex(versionLine: string): string {
  return [
    "#!/bin/sh",
    'if [ "$1" = "--version" ]; then',
    `  echo '${versionLine}'`,
    "  exit 0",
    "fi",
    `printf '%s\\0' "$@" > "$FAKE_AGENT_OUT/args"`,
    `printf '%s' "\${${WireEnv.modelProviderToken}}" > "$FAKE_AGENT_OUT/token"`,
    `printf '%s' "\${${WireEnv.jobId}}" > "$FAKE_AGENT_OUT/job"`,
    `readlink /proc/$$/fd/0 > "$FAKE_AGENT_OUT/stdin"`,
    `echo '{"type":"turn.completed"}'`,
    "",
  ].join("\n");
}

/** A .tar.gz holding the fake codex under `member`, built with the system's tar. */
function buildArchive(versionLine: string, member = "codex"): Buffer {
  const directory = mkdtempSync(join(root, "archive-"));
  writeFileSync(join(directory, member), fakeCodex(versionLine), { mode: 0o755 });
  const result = spawnSync("tar", ["-czf", "codex.tar.gz", member], { cwd: directory });
  expect(result.status, result.stderr.toString()).toBe(0);
  return readFileSync(join(directory, "codex.tar.gz"));
}

interface Workspace {
  home: string;
  output: string;
  installDirectory: string;
}

function workspace(): Workspace {
  const directory = mkdtempSync(join(root, "run-"));
  const home = join(directory, "home");
  const output = join(directory, "out");
  mkdirSync(home);
  mkdirSync(output);
  return { home, output, installDirectory: join(home, ".deckhand", "agents", "codex", VERSION) };
}

function renderCodex(overrides: Partial<RenderCodingAgentStepInput> = {}): string {
  const result = renderCodingAgentStep({
    type: "codex",
    prompt: PROMPT,
    version: VERSION,
    model: "gpt-5.1-codex",
    platform: { os: "linux", arch: "x64" },
    installSource: { kind: "release", baseUrl: `${serverUrl}/releases` },
    modelProviderUrl: `${serverUrl}/proxy`,
    image: IMAGE,
    ...overrides,
  });
  if (!result.ok) throw result.error;
  return result.value.script;
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a script with /bin/sh; stdin stays an open pipe, so an agent reading it would hang.
 * `onStderr` sees the standard error as it comes.
 */
function run(
  script: string,
  space: Workspace,
  environment: Record<string, string> = {},
  onStderr: (text: string) => void = () => {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/sh", ["-c", script], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        HOME: space.home,
        FAKE_AGENT_OUT: space.output,
        [WireEnv.modelProviderToken]: TOKEN,
        [WireEnv.jobId]: JOB_ID,
        ...environment,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      onStderr(stderr);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      children.delete(child);
      child.stdin.destroy();
      resolve({ code, stdout, stderr });
    });
  });
}

/** Entries of the install directory other than the link and the verified trees. */
function leftovers(installDirectory: string): string[] {
  if (!existsSync(installDirectory)) return [];
  return readdirSync(installDirectory).filter((name) => name.startsWith(".stage"));
}

function agentPath(space: Workspace): string {
  return join(space.installDirectory, "bin", "codex");
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "deckhand-install-"));
  server = createServer((request, response) => {
    requests++;
    if (request.url !== ASSET_PATH) {
      response.writeHead(404).end("not found");
      return;
    }
    response.writeHead(200, {
      "content-type": "application/gzip",
      "content-length": String(archive.length),
    });
    if (mode === "hold") {
      held.push(() => response.end(archive));
      return;
    }
    if (mode === "truncate") {
      // Half the body, then the connection drops: curl sees a short transfer.
      response.write(archive.subarray(0, Math.floor(archive.length / 2)), () => {
        response.socket?.destroy();
      });
      return;
    }
    response.end(archive);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  mode = "ok";
  held = [];
  requests = 0;
  archive = buildArchive(`codex-cli ${VERSION}`);
});

afterEach(() => {
  letGo();
  for (const child of children) child.kill("SIGKILL");
  children.clear();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(root, { recursive: true, force: true });
});

describe("rendered codex install", () => {
  it("installs the pinned version, checks it and runs codex with the proxy, credentials and prompt", async () => {
    const space = workspace();
    const result = await run(renderCodex(), space);
    expect(result.stderr).toContain(
      `deckhand: installing codex ${VERSION} from ${serverUrl}${ASSET_PATH}`,
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('{"type":"turn.completed"}\n');

    const args = readFileSync(join(space.output, "args")).toString("utf8").split("\u0000");
    expect(args.pop()).toBe("");
    expect(args).toEqual(
      codexArguments({
        prompt: PROMPT,
        model: "gpt-5.1-codex",
        version: VERSION,
        baseUrl: `${serverUrl}/proxy/codex`,
      }),
    );
    expect(args).toContain(`model_providers.deckhand.base_url="${serverUrl}/proxy/codex"`);
    expect(args).toContain(`model_providers.deckhand.env_key="${WireEnv.modelProviderToken}"`);
    // The prompt arrives byte for byte, as the last argument.
    expect(Buffer.from(args.at(-1)!, "utf8").equals(Buffer.from(PROMPT, "utf8"))).toBe(true);
    expect(readFileSync(join(space.output, "token"), "utf8")).toBe(TOKEN);
    expect(readFileSync(join(space.output, "job"), "utf8")).toBe(JOB_ID);
    expect(readFileSync(join(space.output, "stdin"), "utf8").trim()).toBe("/dev/null");

    expect(lstatSync(agentPath(space)).isSymbolicLink()).toBe(true);
    expect(leftovers(space.installDirectory)).toEqual([]);

    // The pinned version is in place: the next run neither downloads nor reinstalls.
    const downloads = requests;
    const again = await run(renderCodex(), space);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain(
      `deckhand: codex ${VERSION} already installed at ${agentPath(space)}`,
    );
    expect(requests).toBe(downloads);
  });

  it("accepts the release layout, whose archive names the binary after its target", async () => {
    archive = buildArchive(`codex-cli ${VERSION}`, `codex-${TARGET}`);
    const space = workspace();
    const result = await run(renderCodex(), space);
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(space.output, "args"))).toBe(true);
  });

  it("leaves nothing at the install path when the download breaks off, and a retry succeeds", async () => {
    const space = workspace();
    mode = "truncate";
    const failed = await run(renderCodex(), space);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(
      `deckhand: downloading ${serverUrl}${ASSET_PATH} failed; check the install source and the network, then retry the step`,
    );
    expect(existsSync(agentPath(space))).toBe(false);
    expect(lstatSync(join(space.installDirectory, "bin")).isDirectory()).toBe(true);
    expect(leftovers(space.installDirectory)).toEqual([]);
    expect(existsSync(join(space.output, "args"))).toBe(false);

    mode = "ok";
    const retried = await run(renderCodex(), space);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stderr).toContain(`deckhand: installing codex ${VERSION}`);
    expect(existsSync(join(space.output, "args"))).toBe(true);
    expect(leftovers(space.installDirectory)).toEqual([]);
  });

  it("fails clearly and installs nothing when the binary reports another version", async () => {
    archive = buildArchive("codex-cli 0.168.0");
    const space = workspace();
    const result = await run(renderCodex(), space);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      new RegExp(
        `deckhand: \\S+/\\.stage\\.\\w+/package/codex --version printed "codex-cli 0\\.168\\.0", expected "codex-cli 0\\.169\\.0"; check that ${serverUrl.replaceAll(".", "\\.")}\\S+ serves codex 0\\.169\\.0 for linux/x64\\n$`,
      ),
    );
    expect(existsSync(agentPath(space))).toBe(false);
    expect(leftovers(space.installDirectory)).toEqual([]);
    expect(existsSync(join(space.output, "args"))).toBe(false);
  });

  it("replaces an installed binary that no longer reports the pinned version", async () => {
    const space = workspace();
    expect((await run(renderCodex(), space)).code).toBe(0);
    // Overwrite the installed file in place, as a stray process or a bad image layer might.
    const installed = readdirSync(space.installDirectory).find((name) => name.startsWith("tree-"))!;
    writeFileSync(
      join(space.installDirectory, installed, "package", "codex"),
      fakeCodex("codex-cli 0.1.0"),
    );
    const downloads = requests;
    const result = await run(renderCodex(), space);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`deckhand: installing codex ${VERSION}`);
    expect(requests).toBe(downloads + 1);
  });

  it("names each missing binary and the image before downloading anything", async () => {
    const space = workspace();
    // An image without curl and tar: every other tool the script needs is there.
    const bin = mkdtempSync(join(root, "bin-"));
    for (const tool of ["gzip", "chmod", "mktemp", "mkdir", "mv", "ln", "rm", "sleep"]) {
      const found = spawnSync("/bin/sh", ["-c", `command -v ${tool}`])
        .stdout.toString()
        .trim();
      expect(found, tool).not.toBe("");
      symlinkSync(found, join(bin, tool));
    }
    const result = await run(renderCodex(), space, { PATH: bin });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `deckhand: curl, tar not found in image ${IMAGE}; use an image that has them (codex needs: curl tar gzip chmod mktemp mkdir mv ln rm sleep)\n`,
    );
    expect(requests).toBe(0);
    expect(existsSync(space.installDirectory)).toBe(false);
  });

  it("refuses to run without the forwarded model-provider token", async () => {
    const space = workspace();
    const result = await run(renderCodex(), space, { [WireEnv.modelProviderToken]: "" });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `deckhand: ${WireEnv.modelProviderToken} is not set; the runner forwards it into every codingAgent step\n`,
    );
    expect(requests).toBe(0);
  });

  it("installs from npm through the same stage-verify-move steps", async () => {
    const space = workspace();
    const bin = mkdtempSync(join(root, "npm-"));
    const fakeAgent = join(bin, "codex-from-npm");
    writeFileSync(fakeAgent, fakeCodex(`codex-cli ${VERSION}`), { mode: 0o755 });
    // A fake npm that "installs" the package by copying the fake agent into the prefix.
    writeFileSync(
      join(bin, "npm"),
      [
        "#!/bin/sh",
        "previous=",
        "prefix=",
        'for argument in "$@"; do',
        '  if [ "$previous" = "--prefix" ]; then prefix=$argument; fi',
        "  previous=$argument",
        "done",
        `printf '%s\\n' "$@" > "$FAKE_AGENT_OUT/npm-args"`,
        'mkdir -p "$prefix/node_modules/.bin"',
        `cp ${fakeAgent} "$prefix/node_modules/.bin/codex"`,
        "",
      ].join("\n"),
    );
    chmodSync(join(bin, "npm"), 0o755);
    const script = renderCodex({ installSource: { kind: "npm", registry: `${serverUrl}/npm` } });
    const result = await run(script, space, { PATH: `${bin}:${process.env.PATH ?? ""}` });
    expect(result.code, result.stderr).toBe(0);
    const npmArgs = readFileSync(join(space.output, "npm-args"), "utf8").split("\n");
    expect(npmArgs).toContain(`--registry=${serverUrl}/npm/`);
    expect(npmArgs).toContain(`@openai/codex@${VERSION}`);
    expect(lstatSync(agentPath(space)).isSymbolicLink()).toBe(true);
    expect(leftovers(space.installDirectory)).toEqual([]);
    expect(existsSync(join(space.output, "args"))).toBe(true);
  });
});

/** Resolves once `check` holds, checking on every tick of `subscribe`; fails after a deadline. */
function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const poll = () => {
      if (check()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for ${what}`));
      else setImmediate(poll);
    };
    poll();
  });
}

/** A directory of links to the tools the script uses, without flock: the lock's fallback. */
function pathWithoutFlock(): string {
  const bin = mkdtempSync(join(root, "no-flock-"));
  const tools = ["curl", "tar", "gzip", "chmod", "mktemp", "mkdir", "mv", "ln", "rm", "sleep"];
  for (const tool of [...tools, "readlink", "cat"]) {
    const found = spawnSync("/bin/sh", ["-c", `command -v ${tool}`])
      .stdout.toString()
      .trim();
    expect(found, tool).not.toBe("");
    symlinkSync(found, join(bin, tool));
  }
  return bin;
}

describe("one install per version per machine", () => {
  const flock = spawnSync("/bin/sh", ["-c", "command -v flock"]).stdout.toString().trim();

  it.each([
    { lock: "flock", path: () => process.env.PATH ?? "" },
    { lock: "a lock directory", path: pathWithoutFlock },
  ])(
    "two steps installing the same version at once download it once ($lock)",
    async ({ lock, path }) => {
      if (lock === "flock") expect(flock, "flock is on this machine").not.toBe("");
      const first = workspace();
      const second = workspace();
      const shared = join(root, `shared-${lock.replaceAll(" ", "-")}`);
      const script = renderCodex({ installDirectory: shared });
      const environment = { PATH: path() };
      mode = "hold";
      let secondStderr = "";
      const running = [run(script, first, environment)];
      // The first step is downloading; the second starts while it does.
      await until(() => held.length === 1, "the first download");
      running.push(
        run(script, second, environment, (text) => {
          secondStderr = text;
        }),
      );
      await until(
        () =>
          secondStderr.includes("deckhand: waiting for another step installing") || held.length > 1,
        "the second step to wait or download",
      );
      letGo();
      const [one, two] = await Promise.all(running);
      expect(one!.code, one!.stderr).toBe(0);
      expect(two!.code, two!.stderr).toBe(0);
      expect(requests).toBe(1);
      expect(two!.stderr).toContain(
        `deckhand: waiting for another step installing codex ${VERSION} into ${shared}`,
      );
      expect(two!.stderr).toContain(
        `deckhand: codex ${VERSION} was installed by another step at ${shared}/bin/codex`,
      );
      expect(existsSync(join(second.output, "args"))).toBe(true);
      expect(existsSync(join(shared, ".install.lock.d"))).toBe(false);
    },
  );

  it("takes over a lock directory whose holder died mid-install", async () => {
    const space = workspace();
    const shared = join(root, "shared-stale");
    mkdirSync(join(shared, ".install.lock.d"), { recursive: true });
    // A pid that is surely gone: a child that has already exited.
    const gone = spawnSync("/bin/sh", ["-c", "echo $$"]).stdout.toString().trim();
    writeFileSync(join(shared, ".install.lock.d", "pid"), `${gone}\n`);
    const result = await run(renderCodex({ installDirectory: shared }), space, {
      PATH: pathWithoutFlock(),
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`deckhand: installing codex ${VERSION}`);
    expect(existsSync(join(shared, ".install.lock.d"))).toBe(false);
  });
});

describe("offline install sources", () => {
  it("installs from a file:// mirror laid out like the release", async () => {
    const mirror = mkdtempSync(join(root, "mirror-"));
    mkdirSync(join(mirror, `rust-v${VERSION}`));
    writeFileSync(join(mirror, `rust-v${VERSION}`, `codex-${TARGET}.tar.gz`), archive);
    const space = workspace();
    const result = await run(
      renderCodex({ installSource: { kind: "release", baseUrl: `file://${mirror}` } }),
      space,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(`deckhand: installing codex ${VERSION} from file://${mirror}/`);
    expect(requests).toBe(0);
    expect(lstatSync(agentPath(space)).isSymbolicLink()).toBe(true);
  });

  it("uses an executable placed by hand at <install dir>/bin/<binary>, downloading nothing", async () => {
    const space = workspace();
    mkdirSync(join(space.installDirectory, "bin"), { recursive: true });
    writeFileSync(agentPath(space), fakeCodex(`codex-cli ${VERSION}`), { mode: 0o755 });
    const result = await run(renderCodex(), space);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain(
      `deckhand: codex ${VERSION} already installed at ${agentPath(space)}`,
    );
    expect(requests).toBe(0);
  });

  it("runs a binary already installed at a path, checking its version, downloading nothing", async () => {
    const bin = mkdtempSync(join(root, "installed-"));
    writeFileSync(join(bin, "codex"), fakeCodex(`codex-cli ${VERSION}`), { mode: 0o755 });
    const space = workspace();
    const result = await run(
      renderCodex({ installSource: { kind: "installed", path: join(bin, "codex") } }),
      space,
    );
    expect(result.code, result.stderr).toBe(0);
    expect(existsSync(join(space.output, "args"))).toBe(true);
    expect(requests).toBe(0);
    expect(existsSync(space.installDirectory)).toBe(false);

    writeFileSync(join(bin, "codex"), fakeCodex("codex-cli 0.1.0"), { mode: 0o755 });
    const stale = await run(
      renderCodex({ installSource: { kind: "installed", path: join(bin, "codex") } }),
      workspace(),
    );
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain(`printed "codex-cli 0.1.0", expected "codex-cli ${VERSION}"`);
  });

  it("finds an installed binary on PATH, and names PATH when it is not there", async () => {
    const bin = mkdtempSync(join(root, "on-path-"));
    writeFileSync(join(bin, "codex"), fakeCodex(`codex-cli ${VERSION}`), { mode: 0o755 });
    const script = renderCodex({ installSource: { kind: "installed" } });
    const found = await run(script, workspace(), {
      PATH: `${bin}:${process.env.PATH ?? ""}`,
    });
    expect(found.code, found.stderr).toBe(0);
    const missing = await run(script, workspace(), { PATH: "/nonexistent" });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `deckhand: codex is not on PATH (/nonexistent); install codex ${VERSION} or give its path in codingAgent.install_sources.codex\n`,
    );
  });
});
