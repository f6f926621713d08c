import { spawnSync } from "node:child_process";
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTempRepository } from "@deckhand/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { containerTestSetup } from "../test/support.ts";
import { runCli } from "./container-cli.ts";
import { ContainerRuntimeError } from "./container-runtime-error.ts";
import type { ContainerRuntime } from "./detect-container-runtime.ts";
import { type ContainerOutputChunk, runContainer } from "./run-container.ts";

const setup = await containerTestSetup();
// Only read inside tests that are skipped when there is no runtime.
const runtime = setup.runtime as ContainerRuntime;
const image = setup.image;

const directories: string[] = [];
function workspace(): string {
  const directory = realpathSync(mkdtempSync(join(tmpdir(), "deckhand-container-")));
  directories.push(directory);
  return directory;
}
afterEach(() => {
  for (const directory of directories.splice(0))
    rmSync(directory, { recursive: true, force: true });
});

async function containerNamed(name: string): Promise<string> {
  const listed = await runCli(
    runtime,
    ["ps", "--all", "--filter", `name=^${name}$`, "--format", "{{.Names}}"],
    { timeoutMs: 15_000 },
  );
  expect(listed.exitCode).toBe(0);
  return listed.stdout.trim();
}

describe.skipIf(setup.runtime === null)("runContainer", () => {
  it("runs a script in the image with the workspace mounted at its workdir and env passed", async () => {
    const root = workspace();
    writeFileSync(join(root, "input.txt"), "from the host\n");
    const greeting = "hello, with spaces\nand a second line";
    const result = await runContainer(runtime, {
      image,
      script: 'pwd; cat input.txt; printf "%s" "$GREETING" > out.txt; echo done',
      workdir: "/workspace",
      mounts: [{ source: root, target: "/workspace" }],
      env: { GREETING: greeting },
    });
    expect(result).toMatchObject({ ending: "exited", exitCode: 0, ownershipRestored: false });
    expect(result.output.text).toBe("/workspace\nfrom the host\ndone\n");
    expect(readFileSync(join(root, "out.txt"), "utf8")).toBe(greeting);
    expect(result.image.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("streams stdout and stderr to onOutput and keeps only a bounded head and tail", async () => {
    const chunks: ContainerOutputChunk[] = [];
    const result = await runContainer(runtime, {
      image,
      script: "echo to-stderr >&2; i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done",
      output: { headBytes: 64, tailBytes: 64 },
      onOutput: (chunk) => chunks.push(chunk),
    });
    expect(result.exitCode).toBe(0);
    const streamed = (stream: string) =>
      Buffer.concat(
        chunks.filter((chunk) => chunk.stream === stream).map((chunk) => chunk.data),
      ).toString();
    expect(streamed("stderr")).toBe("to-stderr\n");
    expect(streamed("stdout")).toContain("line 1999\n");
    expect(result.output.truncation).not.toBeNull();
    expect(result.output.text).toContain("line 1999\n");
    expect(result.output.text.length).toBeLessThan(300);
  });

  it("runs a command through the image's arguments instead of a script", async () => {
    const result = await runContainer(runtime, { image, command: ["echo", "a;b", "$HOME"] });
    expect(result.output.text).toBe("a;b $HOME\n");
  });

  it("cannot write to a read-only mount", async () => {
    const root = workspace();
    const result = await runContainer(runtime, {
      image,
      script: "touch /inputs/written",
      mounts: [{ source: root, target: "/inputs", readOnly: true }],
    });
    expect(result.exitCode).not.toBe(0);
    expect(result.output.text).toContain("Read-only file system");
    expect(existsSync(join(root, "written"))).toBe(false);
  });

  it("refuses a mount path with a comma before anything runs", async () => {
    const root = workspace();
    const injected = join(root, "w,target=shadow");
    mkdirSync(injected);
    const name = `deckhand-test-comma-${process.pid}`;
    const failure = await runContainer(runtime, {
      image,
      name,
      script: "true",
      mounts: [{ source: injected, target: "/workspace" }],
    }).catch((error: unknown) => error);
    expect(ContainerRuntimeError.isInstance(failure)).toBe(true);
    expect(failure).toMatchObject({ code: "invalid_options" });
    expect((failure as Error).message).toContain("contains a comma");
    expect(await containerNamed(name)).toBe("");
  });

  it("refuses a relative mount target and a bad environment variable name", async () => {
    const root = workspace();
    await expect(
      runContainer(runtime, {
        image,
        script: "true",
        mounts: [{ source: root, target: "workspace" }],
      }),
    ).rejects.toMatchObject({ code: "invalid_options" });
    await expect(
      runContainer(runtime, { image, script: "true", env: { "A=B": "x" } }),
    ).rejects.toMatchObject({ code: "invalid_options" });
  });

  it("reports a non-zero exit code", async () => {
    const result = await runContainer(runtime, { image, script: "echo failing; exit 7" });
    expect(result).toMatchObject({ ending: "exited", exitCode: 7 });
    expect(result.output.text).toBe("failing\n");
  });

  it("kills the container on timeout and leaves no container behind", async () => {
    const name = `deckhand-test-timeout-${process.pid}`;
    const started = Date.now();
    const result = await runContainer(runtime, {
      image,
      name,
      script: "echo started; sleep 60",
      timeoutMs: 1500,
    });
    expect(result).toMatchObject({ name, ending: "timed_out", exitCode: null });
    expect(result.output.text).toContain("started");
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await containerNamed(name)).toBe("");
  });

  it("starts nothing when the abort signal has already fired", async () => {
    const name = `deckhand-test-preaborted-${process.pid}`;
    const root = workspace();
    const result = await runContainer(runtime, {
      image,
      name,
      script: "touch ran",
      mounts: [{ source: root, target: "/workspace" }],
      workdir: "/workspace",
      signal: AbortSignal.abort(),
    });
    expect(result).toMatchObject({ ending: "aborted", exitCode: null, durationMs: 0 });
    expect(existsSync(join(root, "ran"))).toBe(false);
  });

  it("kills the container when the abort signal fires", async () => {
    const name = `deckhand-test-abort-${process.pid}`;
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 1000);
    const result = await runContainer(runtime, {
      image,
      name,
      script: "sleep 60",
      signal: controller.signal,
    });
    expect(result).toMatchObject({ ending: "aborted", exitCode: null });
    expect(await containerNamed(name)).toBe("");
  });

  it("answers a failure of the CLI itself (exit 125) with runtime_failed, not as the step's code", async () => {
    const name = `deckhand-test-taken-${process.pid}`;
    const controller = new AbortController();
    const first = runContainer(runtime, {
      image,
      name,
      script: "sleep 60",
      signal: controller.signal,
    });
    try {
      for (let attempt = 0; attempt < 100 && (await containerNamed(name)) === ""; attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await expect(runContainer(runtime, { image, name, script: "true" })).rejects.toMatchObject({
        code: "runtime_failed",
        message: expect.stringMatching(/failed before the step ran: .*already in use/),
      });
    } finally {
      controller.abort();
      await first;
    }
  });

  it("says clearly when the image is missing and cannot be pulled", async () => {
    const missing = "localhost/deckhand-test/absent:latest";
    await expect(
      runContainer(runtime, { image: missing, script: "true", pull: "never" }),
    ).rejects.toMatchObject({
      code: "image_unavailable",
      message: expect.stringContaining(
        `image ${missing} is not present locally and pulling is off`,
      ),
    });
    await expect(runContainer(runtime, { image: missing, script: "true" })).rejects.toMatchObject({
      code: "image_unavailable",
      message: expect.stringContaining("could not be pulled"),
    });
  });

  describe("network", () => {
    let server: Server;
    let port: number;
    beforeAll(async () => {
      server = createServer((_request, response) => response.end("loopback answered"));
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("reaches a loopback server on the host only with network host", async () => {
      // busybox nc, not wget: the static busybox's wget crashes resolving in an image without NSS.
      const script = `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 127.0.0.1 ${port}`;
      const host = await runContainer(runtime, { image, script, network: "host" });
      expect(host).toMatchObject({ exitCode: 0 });
      expect(host.output.text).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nloopback answered$/);
      const none = await runContainer(runtime, { image, script, network: "none" });
      expect(none.exitCode).not.toBe(0);
      expect(none.output.text).not.toContain("loopback answered");
    });
  });

  describe("files created as another user", () => {
    // A host user who is not root, as on a developer machine with a rootful engine.
    const owner = { uid: 1000, gid: 1000 };

    /** Runs a command on the host as the owner, the way that user's own git would run. */
    function asOwner(cwd: string, ...command: string[]) {
      const home = workspace();
      chownSync(home, owner.uid, owner.gid);
      return spawnSync(
        "setpriv",
        ["--reuid", String(owner.uid), "--regid", String(owner.gid), "--clear-groups", ...command],
        { cwd, encoding: "utf8", env: { ...process.env, HOME: home } },
      );
    }

    function ownersRepository() {
      const repository = createTempRepository({ "README.md": "# demo\n" });
      directories.push(repository.path);
      spawnSync("chown", ["-R", `${owner.uid}:${owner.gid}`, repository.path]);
      return repository.path;
    }

    it.skipIf(process.getuid?.() !== 0)(
      "runs as the host user by default, so new files are the host user's",
      async () => {
        const root = ownersRepository();
        const result = await runContainer(runtime, {
          image,
          owner,
          script: "id -u; mkdir -p made/here && echo x > made/here/file",
          workdir: "/workspace",
          mounts: [{ source: root, target: "/workspace" }],
        });
        expect(result.output.text).toBe("1000\n");
        expect(result.ownershipRestored).toBe(false);
        expect(statSync(join(root, "made/here/file")).uid).toBe(owner.uid);
      },
    );

    it.skipIf(process.getuid?.() !== 0)(
      "gives a root step's files back to the host user, whose git and rm then work",
      async () => {
        const root = ownersRepository();
        const result = await runContainer(runtime, {
          image,
          owner,
          user: "0:0",
          script:
            "id -u; mkdir -p generated/deep && echo x > generated/deep/file && echo y > top.txt",
          workdir: "/workspace",
          mounts: [{ source: root, target: "/workspace" }],
        });
        expect(result.output.text).toBe("0\n");
        expect(result.ownershipRestored).toBe(true);
        for (const path of ["generated", "generated/deep", "generated/deep/file", "top.txt"]) {
          expect(statSync(join(root, path))).toMatchObject({ uid: owner.uid, gid: owner.gid });
        }
        const add = asOwner(root, "git", "add", "-A");
        expect(add.stderr).toBe("");
        expect(add.status).toBe(0);
        expect(asOwner(root, "git", "status", "--porcelain").stdout).toBe(
          "A  generated/deep/file\nA  top.txt\n",
        );
        const remove = asOwner(root, "rm", "-r", "generated");
        expect(remove.stderr).toBe("");
        expect(existsSync(join(root, "generated"))).toBe(false);
      },
    );
  });
});
