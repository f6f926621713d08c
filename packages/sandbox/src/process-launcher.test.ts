import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentEnvironmentPolicy } from "@deckhand/secrets";
import { SpawnHost } from "@deckhand/spawn-host";
import { sandboxTestSetup } from "@deckhand/testkit";
import { WireEnv, WirePath } from "@deckhand/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectSandbox, type SandboxCapability } from "./detect-sandbox.ts";
import { type LaunchProfile, ProcessLauncher } from "./process-launcher.ts";

const setup = sandboxTestSetup();

const CANARY = "canary-server-secret-4f1d9c2b7a";
const NODE = process.execPath;

interface Outcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(
  launcher: ProcessLauncher,
  script: string,
  profile: LaunchProfile,
  options: { cwd?: string; grants?: Record<string, string> } = {},
): Promise<Outcome> {
  const child = launcher.spawn({
    executable: NODE,
    args: ["-e", script],
    cwd: options.cwd ?? profile.writable[0]!,
    environment: { ...launcher.inheritedEnvironment(), PATH: process.env.PATH ?? "" },
    ...(options.grants ? { grants: options.grants } : {}),
    profile,
    pidFromSpawnEvent: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)),
  );
}

/** A script that prints the result of a TCP connection to 127.0.0.1:port. */
function connectScript(port: number): string {
  return `require("node:net").connect(${port}, "127.0.0.1")
    .on("connect", () => { console.log("connected"); process.exit(0); })
    .on("error", (error) => { console.log("refused " + error.code); process.exit(0); });`;
}

// Every sandbox test runs twice: the sandbox forked by this process, then started by a spawn host
// (its pipes handed over, slirp4netns started there too).
describe.skipIf(!setup.available).each([
  { how: "forked here", hosted: false },
  { how: "started by the spawn host", hosted: true },
])("ProcessLauncher with bubblewrap, $how", ({ hosted }) => {
  let spawnHost: SpawnHost | null = null;
  let capability: SandboxCapability;
  let root: string;
  let home: string;
  let dataDir: string;
  let worktree: string;
  let launcher: ProcessLauncher;
  let hostService: Server;
  let hostPort: number;
  let modelRequests: string[];

  beforeAll(async () => {
    if (hosted) {
      spawnHost = new SpawnHost();
      // Ready before the first launch, which would otherwise be forked here.
      expect(await spawnHost.ready()).toBe(true);
    }
    capability = await detectSandbox("bubblewrap");
    // Not under /tmp, which every sandbox replaces with its own: like a real home and data dir.
    root = mkdtempSync(
      join(existsSync("/var/tmp") ? "/var/tmp" : tmpdir(), "deckhand-sandbox-test-"),
    );
    home = join(root, "home");
    dataDir = join(root, "data");
    worktree = join(dataDir, "workspaces", "sessions", "one");
    mkdirSync(join(home, ".ssh"), { recursive: true });
    writeFileSync(join(home, ".ssh", "id_ed25519"), "PRIVATE KEY");
    writeFileSync(join(home, ".netrc"), "machine example.com password hunter2");
    mkdirSync(worktree, { recursive: true });
    mkdirSync(join(dataDir, "workspaces", "sessions", "other"), { recursive: true });
    writeFileSync(join(dataDir, "workspaces", "sessions", "other", "secret.txt"), "other");
    writeFileSync(join(dataDir, "config.json"), "{}");
    hostService = createServer((_request, response) => response.end("host service"));
    hostPort = await listen(hostService);
    modelRequests = [];
    launcher = new ProcessLauncher({
      capability,
      spawnHost,
      policy: agentEnvironmentPolicy({ secretNames: ["UPSTREAM_KEY"], secretValues: [CANARY] }),
      sourceEnvironment: {
        PATH: process.env.PATH,
        UPSTREAM_KEY: "sk-upstream-key-value",
        SOMETHING_ELSE: `prefix-${CANARY}`,
        PLAIN: "plain value",
      },
      hidden: [dataDir],
      home,
      modelProxy: {
        pathPrefix: WirePath.modelProvider,
        port: () => hostPort,
        fetch: (request) => {
          modelRequests.push(new URL(request.url).pathname);
          return new Response("model proxy answer");
        },
      },
    });
  });

  afterAll(async () => {
    spawnHost?.close();
    await launcher?.close();
    hostService?.close();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const agentProfile = (): LaunchProfile => ({
    writable: [worktree],
    network: { internet: false, modelProxy: true },
  });

  it("sees only its own processes, not this one's environment", async () => {
    const outcome = await run(
      launcher,
      `const fs = require("node:fs");
       const pids = fs.readdirSync("/proc").filter((name) => /^\\d+$/.test(name));
       let found = false;
       for (const pid of pids) {
         try { if (fs.readFileSync("/proc/" + pid + "/environ", "utf8").includes(${JSON.stringify(CANARY)})) found = true; } catch {}
       }
       console.log(JSON.stringify({ pids: pids.length, found, parent: fs.existsSync("/proc/${process.pid}") }));`,
      agentProfile(),
    );
    expect(outcome.stderr).toBe("");
    const seen = JSON.parse(outcome.stdout);
    expect(seen.found).toBe(false);
    expect(seen.parent).toBe(false);
    // bubblewrap's init, the forwarder and the script itself.
    expect(seen.pids).toBeLessThanOrEqual(4);
  });

  it("gives the process no secret of Deckhand's but the grants", async () => {
    const outcome = await run(
      launcher,
      "console.log(JSON.stringify(process.env))",
      agentProfile(),
      { grants: { [WireEnv.modelProviderToken]: "scoped-token" } },
    );
    const environment = JSON.parse(outcome.stdout);
    expect(environment.UPSTREAM_KEY).toBeUndefined();
    expect(environment.SOMETHING_ELSE).toBeUndefined();
    expect(outcome.stdout).not.toContain(CANARY);
    expect(environment.PLAIN).toBe("plain value");
    expect(environment[WireEnv.modelProviderToken]).toBe("scoped-token");
  });

  it("writes only to its worktree and its own /tmp", async () => {
    const outcome = await run(
      launcher,
      `const fs = require("node:fs");
       const attempt = (path) => { try { fs.writeFileSync(path, "x"); return "written"; } catch (error) { return error.code; } };
       console.log(JSON.stringify({
         worktree: attempt("made-here.txt"),
         tmp: attempt("/tmp/inside.txt"),
         home: attempt(${JSON.stringify(join(home, "planted"))}),
         data: attempt(${JSON.stringify(join(dataDir, "planted"))}),
       }));`,
      agentProfile(),
    );
    expect(JSON.parse(outcome.stdout)).toEqual({
      worktree: "written",
      tmp: "written",
      home: "EROFS",
      data: "EROFS",
    });
    expect(readFileSync(join(worktree, "made-here.txt"), "utf8")).toBe("x");
    expect(() => readFileSync(join(home, "planted"))).toThrow();
  });

  it("does not see the data directory, other worktrees or the user's credentials", async () => {
    const outcome = await run(
      launcher,
      `const fs = require("node:fs");
       const read = (path) => { try { return fs.readFileSync(path, "utf8"); } catch (error) { return error.code; } };
       const list = (path) => { try { return fs.readdirSync(path); } catch (error) { return error.code; } };
       console.log(JSON.stringify({
         ssh: list(${JSON.stringify(join(home, ".ssh"))}),
         netrc: read(${JSON.stringify(join(home, ".netrc"))}),
         config: read(${JSON.stringify(join(dataDir, "config.json"))}),
         other: read(${JSON.stringify(join(dataDir, "workspaces", "sessions", "other", "secret.txt"))}),
         sessions: list(${JSON.stringify(join(dataDir, "workspaces", "sessions"))}),
       }));`,
      agentProfile(),
    );
    expect(JSON.parse(outcome.stdout)).toEqual({
      ssh: [],
      netrc: "",
      config: "ENOENT",
      other: "ENOENT",
      sessions: ["one"],
    });
  });

  it("starts a program installed under /tmp, which it otherwise masks, and shows it read-only", async () => {
    // A Node unpacked under /tmp, or a checkout there with its toolchain and scripts:
    // bubblewrap's own /tmp would hide them ("bwrap: execvp ...: No such file or directory").
    const installation = mkdtempSync(join("/tmp", "deckhand-installed-agent-"));
    const neighbour = mkdtempSync(join("/tmp", "deckhand-installed-neighbour-"));
    try {
      mkdirSync(join(installation, "bin"));
      mkdirSync(join(installation, "lib"));
      writeFileSync(join(installation, "lib", "greeting.txt"), "installed agent ran");
      const executable = join(installation, "bin", "agent");
      writeFileSync(
        executable,
        `#!/bin/sh
cat "$(dirname "$0")/../lib/greeting.txt"; echo
if touch "$(dirname "$0")/planted" 2>/dev/null; then echo writable; else echo read-only; fi
if [ -e ${JSON.stringify(neighbour)} ]; then echo neighbour-seen; else echo neighbour-hidden; fi
`,
        { mode: 0o755 },
      );
      // A script there run by an interpreter elsewhere, as `node <checkout>/agent.ts`.
      const script = join(installation, "lib", "agent.sh");
      writeFileSync(script, `exec ${JSON.stringify(executable)}\n`);
      const commands = [
        { executable, args: [] },
        { executable: "/bin/sh", args: [script] },
      ];
      for (const [command, network] of [
        [commands[0]!, { internet: false, modelProxy: false }],
        [commands[0]!, { internet: false, modelProxy: true }],
        [commands[1]!, { internet: false, modelProxy: false }],
      ] as const) {
        const child = launcher.spawn({
          ...command,
          cwd: worktree,
          environment: { PATH: process.env.PATH ?? "" },
          profile: { writable: [worktree], network },
          pidFromSpawnEvent: true,
        });
        let stdout = "";
        let stderr = "";
        child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
        const code = await new Promise<number | null>((resolve, reject) => {
          child.once("error", reject);
          child.once("close", resolve);
        });
        expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
        expect(stdout).toBe("installed agent ran\nread-only\nneighbour-hidden\n");
      }
    } finally {
      rmSync(installation, { recursive: true, force: true });
      rmSync(neighbour, { recursive: true, force: true });
    }
  });

  it("starts with a readable path that does not exist (an agent never logged in), absent inside", async () => {
    const outcome = await run(
      launcher,
      `const fs = require("node:fs");
       const read = (path) => { try { return fs.readFileSync(path, "utf8"); } catch (error) { return error.code; } };
       console.log(JSON.stringify({
         missing: read(${JSON.stringify(join(home, ".never-logged-in", "oauth_creds.json"))}),
         worktree: fs.readdirSync(".").length >= 0,
       }));`,
      { ...agentProfile(), readable: [join(home, ".never-logged-in", "oauth_creds.json")] },
    );
    expect(JSON.parse(outcome.stdout)).toEqual({ missing: "ENOENT", worktree: true });
  });

  it("cannot undo its view: no capabilities, so what hides the data directory stays", async () => {
    const outcome = await run(
      launcher,
      `const { spawnSync } = require("node:child_process");
       const fs = require("node:fs");
       const status = fs.readFileSync("/proc/self/status", "utf8");
       const unmount = spawnSync("umount", [${JSON.stringify(dataDir)}], { encoding: "utf8" });
       let config;
       try { config = fs.readFileSync(${JSON.stringify(join(dataDir, "config.json"))}, "utf8"); } catch (error) { config = error.code; }
       console.log(JSON.stringify({ effective: /CapEff:\\s*(\\w+)/.exec(status)[1], unmounted: unmount.status === 0, config }));`,
      agentProfile(),
    );
    expect(JSON.parse(outcome.stdout)).toEqual({
      effective: "0000000000000000",
      unmounted: false,
      config: "ENOENT",
    });
  });

  it("reaches the model proxy on the server's port and no other loopback service", async () => {
    const outcome = await run(
      launcher,
      `(async () => {
         const answer = await fetch("http://127.0.0.1:${hostPort}${WirePath.modelProvider}/codex/v1/responses");
         const api = await fetch("http://127.0.0.1:${hostPort}${WirePath.serverApi}/projects");
         console.log(JSON.stringify({ model: await answer.text(), api: api.status }));
       })();`,
      agentProfile(),
    );
    expect(outcome.stderr).toBe("");
    expect(JSON.parse(outcome.stdout)).toEqual({ model: "model proxy answer", api: 404 });
    expect(modelRequests).toEqual([`${WirePath.modelProvider}/codex/v1/responses`]);

    const other = createServer((_request, response) => response.end("other"));
    const otherPort = await listen(other);
    try {
      const attempt = await run(launcher, connectScript(otherPort), agentProfile());
      expect(attempt.stdout.trim()).toBe("refused ECONNREFUSED");
    } finally {
      other.close();
    }
  });

  it("ends a process whose network slirp4netns fails to give, without running it", async () => {
    if (capability.kind !== "bubblewrap") throw new Error("the suite runs under bubblewrap");
    const broken = join(root, "broken-slirp4netns");
    writeFileSync(broken, '#!/bin/sh\necho "no tap device" >&2\nexit 1\n', { mode: 0o755 });
    const marker = join(worktree, "ran-without-network");
    const warnings: string[] = [];
    const brokenLauncher = new ProcessLauncher({
      capability: { ...capability, slirp4netns: broken, internetFallback: null },
      spawnHost,
      policy: agentEnvironmentPolicy({ secretNames: [], secretValues: [] }),
      sourceEnvironment: { PATH: process.env.PATH },
      onWarning: (message) => warnings.push(message),
    });
    try {
      const outcome = await run(
        brokenLauncher,
        `require("node:fs").writeFileSync(${JSON.stringify(marker)}, "ran")`,
        { writable: [worktree], network: { internet: true, modelProxy: false } },
      );
      expect(outcome.signal).toBe("SIGKILL");
      expect(existsSync(marker)).toBe(false);
      expect(warnings).toEqual([
        "a sandbox's network could not be set up; its process was stopped",
      ]);
    } finally {
      await brokenLauncher.close();
    }
  });

  it("has no network at all when the profile allows none", async () => {
    const outcome = await run(launcher, connectScript(hostPort), {
      writable: [worktree],
      network: { internet: false, modelProxy: false },
    });
    expect(outcome.stdout.trim()).toBe("refused ECONNREFUSED");
  });

  it("gives steps the internet but not the machine's loopback", async (context) => {
    if (capability.kind !== "bubblewrap" || capability.slirp4netns === null) context.skip();
    const outcome = await run(
      launcher,
      `const interfaces = Object.keys(require("node:os").networkInterfaces());
         const net = require("node:net");
         net.connect(${hostPort}, "127.0.0.1")
           .on("connect", () => { console.log(JSON.stringify({ interfaces, loopback: "connected" })); process.exit(0); })
           .on("error", (error) => { console.log(JSON.stringify({ interfaces, loopback: error.code })); process.exit(0); });`,
      { writable: [worktree], network: { internet: true, modelProxy: false } },
    );
    expect(outcome.stderr).toBe("");
    const seen = JSON.parse(outcome.stdout);
    expect(seen.interfaces).toContain("tap0");
    expect(seen.loopback).toBe("ECONNREFUSED");
  });

  it("gives each of many sandboxes started at once its network", async (context) => {
    if (capability.kind !== "bubblewrap" || capability.slirp4netns === null) context.skip();
    // Batch steps start together; slirp4netns must not configure a namespace while bubblewrap
    // still sets up its loopback (that failed about one start in three, with several at once).
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, () =>
        run(
          launcher,
          `console.log(Object.keys(require("node:os").networkInterfaces()).sort().join(","));`,
          { writable: [worktree], network: { internet: true, modelProxy: false } },
        ),
      ),
    );
    for (const outcome of outcomes) {
      expect(outcome.stderr).toBe("");
      expect(outcome.stdout.trim()).toBe("lo,tap0");
    }
  });

  it("reaches allowed hosts through its HTTP proxy and nothing else", async () => {
    const allowed = new ProcessLauncher({
      capability,
      spawnHost,
      settings: { mode: "bubblewrap", allowHosts: [], stepNetwork: "full", hide: [], writable: [] },
      home,
      hidden: [dataDir],
    });
    const tunnel = (
      port: number,
    ) => `const socket = require("node:net").connect(3128, "127.0.0.1", () => {
         socket.write("CONNECT 127.0.0.1:${port} HTTP/1.1\\r\\nHost: 127.0.0.1:${port}\\r\\n\\r\\n");
       });
       let text = "";
       socket.on("data", (chunk) => {
         text += chunk;
         if (text.includes("\\r\\n\\r\\n") && !text.includes("GET sent")) {
           if (!text.startsWith("HTTP/1.1 200")) { console.log(text.split("\\r\\n")[0]); process.exit(0); }
           text += "GET sent";
           socket.write("GET / HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\n\\r\\n");
         }
       });
       socket.on("end", () => { console.log(text.includes("host service") ? "host service" : text); });
       socket.on("error", (error) => console.log(error.code));`;
    try {
      const through = await run(allowed, tunnel(hostPort), {
        writable: [worktree],
        network: { internet: false, modelProxy: false, allowHosts: [`127.0.0.1:${hostPort}`] },
      });
      expect(through.stdout.trim()).toBe("host service");
      const refused = await run(allowed, tunnel(hostPort + 1), {
        writable: [worktree],
        network: { internet: false, modelProxy: false, allowHosts: [`127.0.0.1:${hostPort}`] },
      });
      expect(refused.stdout.trim()).toBe("HTTP/1.1 403 Forbidden");
    } finally {
      await allowed.close();
    }
  });

  it("serves the model proxy's own address through its HTTP proxy, as curl reaches it", async () => {
    const outcome = await run(
      launcher,
      `const socket = require("node:net").connect(3128, "127.0.0.1", () => {
         socket.write("GET http://127.0.0.1:${hostPort}${WirePath.modelProvider}/claude-code/v1/models HTTP/1.1\\r\\nHost: 127.0.0.1:${hostPort}\\r\\nConnection: close\\r\\n\\r\\n");
       });
       let text = "";
       socket.on("data", (chunk) => { text += chunk; });
       socket.on("end", () => console.log(text.includes("model proxy answer") ? "model proxy answer" : text));`,
      {
        writable: [worktree],
        network: { internet: false, modelProxy: true, allowHosts: ["example.com"] },
      },
    );
    expect(outcome.stdout.trim()).toBe("model proxy answer");
  });

  it("runs git in a worktree whose repository is hidden, without letting it change git's config", async () => {
    const repository = join(dataDir, "projects", "repo");
    mkdirSync(repository, { recursive: true });
    const git = (cwd: string, ...args: string[]) =>
      execFileSync("git", args, {
        cwd,
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: "t",
          GIT_AUTHOR_EMAIL: "t@t",
          GIT_COMMITTER_NAME: "t",
          GIT_COMMITTER_EMAIL: "t@t",
        },
      });
    git(repository, "init", "-q", "-b", "main");
    writeFileSync(join(repository, "file.txt"), "one\n");
    git(repository, "add", ".");
    git(repository, "commit", "-qm", "one");
    const checkout = join(dataDir, "workspaces", "sessions", "git-one");
    git(repository, "worktree", "add", "-q", "--detach", checkout);
    const outcome = await run(
      launcher,
      `const { execFileSync } = require("node:child_process");
       const fs = require("node:fs");
       fs.writeFileSync("file.txt", "two\\n");
       const diff = execFileSync("git", ["diff", "--stat"], { encoding: "utf8" });
       let replaced;
       try { fs.writeFileSync(".git", "gitdir: /tmp/evil"); replaced = "written"; } catch (error) { replaced = error.code; }
       let config;
       try { execFileSync("git", ["config", "core.fsmonitor", "touch /tmp/pwned"], { stdio: "pipe" }); config = "changed"; } catch { config = "refused"; }
       console.log(JSON.stringify({ diff: diff.trim(), replaced, config }));`,
      { writable: [checkout], network: { internet: false, modelProxy: false } },
    );
    expect(outcome.stderr).toBe("");
    const seen = JSON.parse(outcome.stdout);
    expect(seen.diff).toContain("file.txt | 2 +-");
    expect(seen.replaced).toBe("EROFS");
    expect(seen.config).toBe("refused");
    const fsmonitor = spawnSync("git", ["config", "--get-all", "core.fsmonitor"], {
      cwd: checkout,
    });
    expect(fsmonitor.status).toBe(1);
  });

  it("ends everything in the sandbox on a signal to its process group", async () => {
    const child = launcher.spawn({
      executable: "/bin/sh",
      args: ["-c", "sleep 600.25 & echo started; wait"],
      cwd: worktree,
      environment: launcher.inheritedEnvironment(),
      profile: { writable: [worktree], network: { internet: false, modelProxy: false } },
      detached: true,
      pidFromSpawnEvent: true,
    });
    await new Promise<void>((resolve) => child.stdout!.once("data", () => resolve()));
    const closed = new Promise((resolve) =>
      child.once("close", (_code, signal) => resolve(signal)),
    );
    process.kill(-child.pid!, "SIGTERM");
    expect(await closed).toBe("SIGTERM");
    // pgrep answers 1 when no process matches.
    expect(spawnSync("pgrep", ["-f", "sleep 600.25"]).status).toBe(1);
  });
});

describe("detectSandbox", () => {
  it("answers none, with the reason, when the mode is none", async () => {
    expect(await detectSandbox("none")).toEqual({
      kind: "none",
      reason: 'sandbox is "none" in config.json',
    });
  });

  it("runs unsandboxed under auto when bwrap is missing, saying how to install it", async () => {
    const capability = await detectSandbox("auto", { path: "/nonexistent" });
    expect(capability.kind).toBe("none");
    expect(capability.kind === "none" && capability.reason).toMatch(
      /bwrap is not on PATH; install bubblewrap/,
    );
  });

  it("refuses to start under bubblewrap when bwrap is missing", async () => {
    await expect(detectSandbox("bubblewrap", { path: "/nonexistent" })).rejects.toMatchObject({
      code: "unavailable",
      message: expect.stringMatching(/sandbox is "bubblewrap" but bwrap is not on PATH/),
    });
  });

  it("answers none on systems other than Linux", async () => {
    const capability = await detectSandbox("auto", { platform: "darwin" });
    expect(capability).toMatchObject({ kind: "none" });
  });

  describe.skipIf(!setup.available)("with bubblewrap and slirp4netns on PATH", () => {
    const realBubblewrap = execFileSync("sh", ["-c", "command -v bwrap"], { encoding: "utf8" });
    const realSlirp = spawnSync("sh", ["-c", "command -v slirp4netns"], { encoding: "utf8" });
    let directory: string;

    beforeAll(() => {
      directory = mkdtempSync(join(tmpdir(), "deckhand-detect-"));
    });
    afterAll(() => {
      rmSync(directory, { recursive: true, force: true });
    });

    /** A PATH of wrappers that log each start and run the real program, or fail. */
    function wrappers(name: string, bubblewrap: "works" | "fails", slirp: "works" | "fails") {
      const bin = join(directory, name);
      mkdirSync(bin);
      const log = join(bin, "starts.log");
      const wrapper = (program: string, real: string, works: boolean) => {
        const body = works ? `exec ${real.trim()} "$@"` : 'echo "broken here" >&2; exit 1';
        writeFileSync(join(bin, program), `#!/bin/sh\necho ${program} >> ${log}\n${body}\n`, {
          mode: 0o755,
        });
      };
      wrapper("bwrap", realBubblewrap, bubblewrap === "works");
      wrapper("slirp4netns", realSlirp.stdout, slirp === "works");
      const starts = () =>
        existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter(Boolean) : [];
      return { path: bin, starts };
    }

    it.skipIf(realSlirp.status !== 0)(
      "finds both working with one sandbox started, not one after another",
      async () => {
        const { path, starts } = wrappers("both", "works", "works");
        const capability = await detectSandbox("auto", { path });
        expect(capability).toEqual({
          kind: "bubblewrap",
          bubblewrap: join(path, "bwrap"),
          slirp4netns: join(path, "slirp4netns"),
          internetFallback: null,
        });
        expect(starts().filter((program) => program === "bwrap")).toEqual(["bwrap"]);
      },
    );

    it("sandboxes with the machine's network when slirp4netns does not work", async () => {
      const { path } = wrappers("no-slirp", "works", "fails");
      const capability = await detectSandbox("auto", { path });
      expect(capability).toMatchObject({ kind: "bubblewrap", slirp4netns: null });
      expect(capability.kind === "bubblewrap" && capability.internetFallback).toMatch(
        /^slirp4netns does not work here \(.*\), so steps with network share the machine's network/,
      );
    });

    it("says bubblewrap is what cannot work when it fails, whatever slirp4netns does", async () => {
      const { path } = wrappers("no-bwrap", "fails", "works");
      const capability = await detectSandbox("auto", { path });
      expect(capability.kind).toBe("none");
      expect(capability.kind === "none" && capability.reason).toMatch(
        /^bwrap cannot create a sandbox here \(broken here\)/,
      );
    });
  });
});

describe("ProcessLauncher.unconfined", () => {
  it("starts processes directly, with the policy applied", async () => {
    const launcher = ProcessLauncher.unconfined(agentEnvironmentPolicy({ secretValues: [CANARY] }));
    const directory = mkdtempSync(join(tmpdir(), "deckhand-unconfined-"));
    try {
      const outcome = await run(launcher, "console.log(JSON.stringify(process.env))", {
        writable: [directory],
        network: { internet: true, modelProxy: true },
      });
      expect(launcher.sandbox).toBe("none");
      expect(outcome.stdout).not.toContain(CANARY);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
