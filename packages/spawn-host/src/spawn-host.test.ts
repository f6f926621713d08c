import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { isRunning, until } from "../test/processes.ts";
import { type HostedExecOptions, SPAWN_HOST_EXITED, SpawnHost } from "./spawn-host.ts";

const OPTIONS: HostedExecOptions = {
  cwd: process.cwd(),
  env: { PATH: process.env.PATH },
  maxBuffer: 64 * 1024 * 1024,
  timeoutMs: 60_000,
  killSignal: "SIGTERM",
};

const hosts: SpawnHost[] = [];
function host(options?: ConstructorParameters<typeof SpawnHost>[0]): SpawnHost {
  const created = new SpawnHost(options);
  hosts.push(created);
  return created;
}

/** A host that has started: commands given to it run through it, not from this process. */
async function readyHost(options?: ConstructorParameters<typeof SpawnHost>[0]): Promise<SpawnHost> {
  const created = host(options);
  expect(await created.ready()).toBe(true);
  return created;
}

afterEach(() => {
  for (const created of hosts.splice(0)) created.close();
});

describe("running commands", () => {
  it("returns output and exit code 0, from another process than this one", async () => {
    const spawnHost = await readyHost();
    const result = await spawnHost.execFile(
      "sh",
      ["-c", "echo out; echo err >&2; echo $PPID"],
      OPTIONS,
    );
    expect(result.error).toBeNull();
    const [out, parentPid] = result.stdout.trimEnd().split("\n");
    expect(out).toBe("out");
    expect(result.stderr).toBe("err\n");
    expect(spawnHost.pid).toBeDefined();
    expect(spawnHost.pid).not.toBe(process.pid);
    expect(Number(parentPid)).toBe(spawnHost.pid);
  });

  it("runs commands itself while the host starts, so none waits for it, then through the host", async () => {
    const spawnHost = host();
    const first = await spawnHost.execFile("sh", ["-c", "echo $PPID"], OPTIONS);
    expect(Number(first.stdout.trim())).toBe(process.pid);
    expect(spawnHost.pid).toBeDefined();
    expect(await spawnHost.ready()).toBe(true);
    const later = await spawnHost.execFile("sh", ["-c", "echo $PPID"], OPTIONS);
    expect(Number(later.stdout.trim())).toBe(spawnHost.pid);
  });

  it("reports a failing exit code with the output so far", async () => {
    const result = await (await readyHost()).execFile(
      "sh",
      ["-c", "echo partial; exit 3"],
      OPTIONS,
    );
    expect(result.error?.code).toBe(3);
    expect(result.error?.killed).toBe(false);
    expect(result.stdout).toBe("partial\n");
  });

  it("writes the input to standard input and closes it", async () => {
    const spawnHost = await readyHost();
    expect(
      (await spawnHost.execFile("cat", [], { ...OPTIONS, input: "line one\nline two\n" })).stdout,
    ).toBe("line one\nline two\n");
    // Without input, standard input is closed at once: `cat` ends instead of waiting.
    expect((await spawnHost.execFile("cat", [], OPTIONS)).stdout).toBe("");
  });

  it("carries large output whole", async () => {
    const bytes = 8 * 1024 * 1024;
    const result = await (await readyHost()).execFile(
      "head",
      ["-c", String(bytes), "/dev/zero"],
      OPTIONS,
    );
    expect(result.error).toBeNull();
    expect(result.stdout.length).toBe(bytes);
  });

  it("runs commands side by side", async () => {
    const spawnHost = await readyHost();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, index) => spawnHost.execFile("echo", [String(index)], OPTIONS)),
    );
    expect(results.map((result) => result.stdout)).toEqual(
      Array.from({ length: 8 }, (_, index) => `${index}\n`),
    );
  });

  it("gives a command only the environment and directory it was given", async () => {
    const result = await (await readyHost()).execFile("sh", ["-c", "pwd; env"], {
      ...OPTIONS,
      cwd: "/usr",
      env: { PATH: process.env.PATH, ONLY_THIS: "yes" },
    });
    const [directory, ...variables] = result.stdout.trimEnd().split("\n");
    expect(directory).toBe("/usr");
    const names = variables
      .map((line) => line.slice(0, line.indexOf("=")))
      .filter((name) => name !== "PWD");
    expect(names).toContain("ONLY_THIS");
    expect(names.filter((name) => !["ONLY_THIS", "PATH", "SHLVL", "_"].includes(name))).toEqual([]);
  });

  it("reports a missing executable as ENOENT", async () => {
    const result = await (await readyHost()).execFile("deckhand-no-such-program", [], OPTIONS);
    expect(result.error?.code).toBe("ENOENT");
  });

  it("rejects what execFile refuses, as execFile throws it, and goes on", async () => {
    const spawnHost = await readyHost();
    const running = spawnHost.execFile("sh", ["-c", "read line; echo $line"], {
      ...OPTIONS,
      input: "still here\n",
    });
    await expect(spawnHost.execFile("echo", ["a\0b"], OPTIONS)).rejects.toMatchObject({
      code: "ERR_INVALID_ARG_VALUE",
    });
    expect((await running).stdout).toBe("still here\n");
    await expect(
      host({ nodeExecutable: "/nonexistent/deckhand-node" }).execFile("echo", ["a\0b"], OPTIONS),
    ).rejects.toMatchObject({ code: "ERR_INVALID_ARG_VALUE" });
  });

  it("stops a command at its timeout with the kill signal", async () => {
    const result = await (await readyHost()).execFile("sleep", ["30"], {
      ...OPTIONS,
      timeoutMs: 200,
    });
    expect(result.error?.killed).toBe(true);
    expect(result.error?.signal).toBe("SIGTERM");
    expect(result.error?.code).toBeNull();
  });

  it("stops a command when its signal aborts, also one aborted before it started", async () => {
    const spawnHost = await readyHost();
    const controller = new AbortController();
    const running = spawnHost.execFile("sleep", ["30"], { ...OPTIONS, signal: controller.signal });
    // The sleep runs once the host has answered another command sent after it.
    await spawnHost.execFile("true", [], OPTIONS);
    controller.abort();
    expect((await running).error?.name).toBe("AbortError");
    const aborted = (
      await spawnHost.execFile("sleep", ["30"], {
        ...OPTIONS,
        signal: AbortSignal.abort(),
      })
    ).error;
    expect(aborted?.name).toBe("AbortError");
  });

  it("stops output past the bound", async () => {
    const result = await (await readyHost()).execFile("echo", ["longer than four"], {
      ...OPTIONS,
      maxBuffer: 4,
    });
    expect(result.error?.code).toBe("ERR_CHILD_PROCESS_STDIO_MAXBUFFER");
  });
});

describe("the host process", () => {
  it("is started with an empty environment", async () => {
    process.env.DECKHAND_SPAWN_HOST_TEST_SECRET = "not for the host";
    try {
      const spawnHost = await readyHost();
      await spawnHost.execFile("true", [], OPTIONS);
      const environment = readFileSync(`/proc/${spawnHost.pid}/environ`, "utf8")
        .split("\0")
        .filter((entry) => entry !== "")
        .map((entry) => entry.split("=")[0]);
      // Node adds its IPC channel's descriptor and serialization; nothing else is there.
      expect(environment.filter((name) => !name?.startsWith("NODE_CHANNEL_"))).toEqual([]);
    } finally {
      delete process.env.DECKHAND_SPAWN_HOST_TEST_SECRET;
    }
  });

  it("when killed, fails what it ran and is started again for the next command", async () => {
    const spawnHost = await readyHost();
    const running = spawnHost.execFile("sleep", ["30"], OPTIONS);
    await spawnHost.execFile("true", [], OPTIONS);
    const first = spawnHost.pid!;
    process.kill(first, "SIGKILL");
    expect((await running).error?.code).toBe(SPAWN_HOST_EXITED);
    const after = await spawnHost.execFile("echo", ["again"], OPTIONS);
    expect(after.stdout).toBe("again\n");
    expect(spawnHost.pid).toBeDefined();
    expect(spawnHost.pid).not.toBe(first);
  });

  it("is stopped when idle, and started again for the next command", async () => {
    const spawnHost = await readyHost({ idleMs: 50 });
    await spawnHost.execFile("true", [], OPTIONS);
    const first = spawnHost.pid!;
    expect(isRunning(first)).toBe(true);
    await until(() => !isRunning(first), "the idle host to exit");
    expect(spawnHost.pid).toBeUndefined();
    expect((await spawnHost.execFile("echo", ["again"], OPTIONS)).stdout).toBe("again\n");
    expect(spawnHost.pid).not.toBe(first);
  });

  it("is not stopped for idleness while a command runs", async () => {
    const spawnHost = await readyHost({ idleMs: 50 });
    const result = await spawnHost.execFile("sh", ["-c", "sleep 0.5; echo done"], OPTIONS);
    expect(result.error).toBeNull();
    expect(result.stdout).toBe("done\n");
  });

  it("that cannot start leaves commands to run directly", async () => {
    const spawnHost = host({ nodeExecutable: "/nonexistent/deckhand-node" });
    const result = await spawnHost.execFile("sh", ["-c", "echo direct; exit 2"], {
      ...OPTIONS,
      input: "",
    });
    expect(result.error?.code).toBe(2);
    expect(result.stdout).toBe("direct\n");
    expect(spawnHost.pid).toBeUndefined();
    expect(await spawnHost.ready()).toBe(false);
    expect((await spawnHost.execFile("deckhand-no-such-program", [], OPTIONS)).error?.code).toBe(
      "ENOENT",
    );
  });

  it("does not keep its parent alive, and exits with it", async () => {
    const pids = await parentRun("exit");
    await until(() => !isRunning(pids.host), "the host to exit after its parent");
  });

  it("exits when its parent is killed", async () => {
    const pids = await parentRun("kill");
    await until(() => !isRunning(pids.host), "the host to exit after its parent was killed");
  });
});

const MODULE = fileURLToPath(new URL("./spawn-host.ts", import.meta.url));

/**
 * A parent Node process that runs one command through its host and prints the host's pid: with
 * `exit` it then ends on its own (it must, the host being idle), with `kill` it stays and is
 * killed with SIGKILL, which gives it no chance of telling the host.
 */
async function parentRun(ending: "exit" | "kill"): Promise<{ host: number }> {
  const script = `
    const { SpawnHost } = await import(${JSON.stringify(MODULE)});
    const host = new SpawnHost();
    await host.execFile("true", [], { cwd: "/", env: {}, maxBuffer: 1024, timeoutMs: 60000, killSignal: "SIGTERM" });
    console.log(JSON.stringify({ host: host.pid }));
    if (${JSON.stringify(ending)} === "kill") setInterval(() => {}, 1000);
  `;
  const parent = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  parent.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolveExit) => parent.once("exit", resolveExit));
  await until(() => output.includes("\n"), "the parent to report its host");
  const pids = JSON.parse(output) as { host: number };
  expect(isRunning(pids.host)).toBe(true);
  if (ending === "kill") parent.kill("SIGKILL");
  else expect(await exited).toBe(0);
  await exited;
  return pids;
}
