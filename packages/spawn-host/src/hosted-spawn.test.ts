import type { ChildProcess } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { isRunning, until } from "../test/processes.ts";
import { type HostedSpawnOptions, SPAWN_HOST_EXITED, SpawnHost } from "./spawn-host.ts";

const OPTIONS: HostedSpawnOptions = {
  cwd: process.cwd(),
  env: { PATH: process.env.PATH },
  detached: true,
  stdio: ["pipe", "pipe", "pipe"],
};

const hosts: SpawnHost[] = [];
async function readyHost(): Promise<SpawnHost> {
  const created = new SpawnHost();
  hosts.push(created);
  expect(await created.ready()).toBe(true);
  return created;
}

afterEach(() => {
  for (const created of hosts.splice(0)) created.close();
});

interface Ended {
  events: string[];
  exit: [number | null, NodeJS.Signals | null];
  close: [number | null, NodeJS.Signals | null];
  stdout: string;
  stderr: string;
}

/** Everything a caller sees of the process until "close", in order of its events. */
function watch(child: ChildProcess): Promise<Ended> {
  const ended: Partial<Ended> & { events: string[]; stdout: string; stderr: string } = {
    events: [],
    stdout: "",
    stderr: "",
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    ended.stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    ended.stderr += chunk.toString();
  });
  child.once("spawn", () => ended.events.push("spawn"));
  child.once("exit", (code, signal) => {
    ended.events.push("exit");
    ended.exit = [code, signal];
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code, signal) => {
      ended.events.push("close");
      ended.close = [code, signal];
      resolve(ended as Ended);
    });
  });
}

describe("processes the host spawns", () => {
  it("streams output and input for the process's life and reports its exit code", async () => {
    const spawnHost = await readyHost();
    const child = spawnHost.spawn(
      "sh",
      ["-c", 'echo out; echo err >&2; read line; echo "got $line"; echo $PPID; exit 3'],
      OPTIONS,
    );
    // Its pid comes with "spawn": the host starts it.
    expect(child.pid).toBeUndefined();
    const ended = watch(child);
    // Output arrives while it runs: it waits for this line until "out" has been read.
    await until(() => child.stdout!.readableLength > 0 || child.pid !== undefined, "the start");
    child.stdin!.write("a line\n");
    const { events, exit, close, stdout, stderr } = await ended;
    const [out, got, parentPid] = stdout.trimEnd().split("\n");
    expect(out).toBe("out");
    expect(got).toBe("got a line");
    expect(Number(parentPid)).toBe(spawnHost.pid);
    expect(stderr).toBe("err\n");
    expect(exit).toEqual([3, null]);
    expect(close).toEqual([3, null]);
    expect(events).toEqual(["spawn", "exit", "close"]);
    expect(child.exitCode).toBe(3);
  });

  it("loses no output written the moment the process starts, however much", async () => {
    const spawnHost = await readyHost();
    const child = spawnHost.spawn(
      "sh",
      ["-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo done >&2"],
      { ...OPTIONS, stdio: ["ignore", "pipe", "pipe"] },
    );
    const { stdout, stderr, exit } = await watch(child);
    expect(stdout.length).toBe(3_000_001);
    expect(stderr).toBe("done\n");
    expect(exit).toEqual([0, null]);
  });

  it("hands over further pipes, readable and writable, as the descriptors asked for", async () => {
    const spawnHost = await readyHost();
    const child = spawnHost.spawn("sh", ["-c", 'read line <&3; echo "fd3 $line" >&4'], {
      ...OPTIONS,
      stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"],
    });
    expect(child.stdout).toBeNull();
    const fromFour: Buffer[] = [];
    (child.stdio[4] as NodeJS.ReadableStream).on("data", (chunk: Buffer) => fromFour.push(chunk));
    (child.stdio[3] as NodeJS.WritableStream).end("hello\n");
    const { exit } = await watch(child);
    expect(exit).toEqual([0, null]);
    expect(Buffer.concat(fromFour).toString()).toBe("fd3 hello\n");
  });

  it("signals the process with kill, also before its pid is known, and reports the signal", async () => {
    const spawnHost = await readyHost();
    const child = spawnHost.spawn("sleep", ["600"], OPTIONS);
    const ended = watch(child);
    expect(child.kill("SIGTERM")).toBe(true);
    const { exit, close } = await ended;
    expect(exit).toEqual([null, "SIGTERM"]);
    expect(close).toEqual([null, "SIGTERM"]);
    expect(child.signalCode).toBe("SIGTERM");
    expect(child.kill("SIGKILL")).toBe(false);
  });

  it("starts the process in its own group, which a signal to the group ends whole", async () => {
    const spawnHost = await readyHost();
    const child = spawnHost.spawn("sh", ["-c", "sleep 600 & echo $!; wait"], OPTIONS);
    let background = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      background += chunk.toString();
    });
    const ended = watch(child);
    await until(() => background.includes("\n"), "the background process's pid");
    const backgroundPid = Number(background.trim());
    expect(isRunning(backgroundPid)).toBe(true);
    process.kill(-child.pid!, "SIGKILL");
    expect((await ended).exit).toEqual([null, "SIGKILL"]);
    await until(() => !isRunning(backgroundPid), "the group's end");
  });

  it("gives the process only the environment and directory it was given", async () => {
    const spawnHost = await readyHost();
    const child = spawnHost.spawn("sh", ["-c", "pwd; env"], {
      ...OPTIONS,
      cwd: "/usr",
      env: { PATH: process.env.PATH, ONLY: "this" },
    });
    const { stdout } = await watch(child);
    const [directory, ...variables] = stdout.trimEnd().split("\n");
    expect(directory).toBe("/usr");
    const names = variables.map((line) => line.split("=")[0]);
    expect(names).toContain("ONLY");
    expect(names).not.toContain("HOME");
  });

  it("reports a process that cannot start with an error, as spawn does", async () => {
    const spawnHost = await readyHost();
    const child = spawnHost.spawn("/nonexistent/program", [], OPTIONS);
    const error = new Promise<NodeJS.ErrnoException>((resolve) => child.once("error", resolve));
    const closed = new Promise((resolve) => child.once("close", resolve));
    expect((await error).code).toBe("ENOENT");
    await closed;
    expect(child.pid).toBeUndefined();
  });

  it("spawns from this process while the host is not ready yet", async () => {
    const spawnHost = new SpawnHost();
    hosts.push(spawnHost);
    const child = spawnHost.spawn("sh", ["-c", "echo $PPID"], OPTIONS);
    expect(child.pid).toBeDefined();
    const { stdout } = await watch(child);
    expect(Number(stdout.trim())).toBe(process.pid);
  });

  it("keeps the host while a process runs, however long it is idle otherwise", async () => {
    const spawnHost = new SpawnHost({ idleMs: 50 });
    hosts.push(spawnHost);
    expect(await spawnHost.ready()).toBe(true);
    const hostPid = spawnHost.pid!;
    const child = spawnHost.spawn("sh", ["-c", "read line; echo $line"], OPTIONS);
    const ended = watch(child);
    await until(() => child.pid !== undefined, "the start");
    // Well past the idle time: the host would have been stopped had it not counted the process.
    const idleOver = Date.now() + 500;
    await until(() => Date.now() > idleOver, "the idle time to pass");
    expect(spawnHost.pid).toBe(hostPid);
    child.stdin!.end("still here\n");
    expect((await ended).stdout).toBe("still here\n");
    await until(() => spawnHost.pid === undefined, "the idle host's stop");
  });

  it("when the host dies, stops its processes (their group too) and reports them killed", async () => {
    const spawnHost = await readyHost();
    const child = spawnHost.spawn("sh", ["-c", "sleep 600 & echo $!; wait"], OPTIONS);
    const ended = watch(child);
    let background = "";
    child.stdout!.on("data", (chunk: Buffer) => {
      background += chunk.toString();
    });
    await until(() => background.includes("\n"), "the background process's pid");
    const backgroundPid = Number(background.trim());
    process.kill(spawnHost.pid!, "SIGKILL");
    const { exit, close } = await ended;
    expect(exit).toEqual([null, "SIGKILL"]);
    expect(close).toEqual([null, "SIGKILL"]);
    await until(() => !isRunning(backgroundPid), "the group's end");
    await until(() => !isRunning(child.pid!), "the process's end");
    // The next process starts a new host.
    expect(await spawnHost.ready()).toBe(true);
    const next = await watch(spawnHost.spawn("sh", ["-c", "exit 0"], OPTIONS));
    expect(next.exit).toEqual([0, null]);
  });

  it("fails a process whose host died before it started, saying to run it again", async () => {
    const spawnHost = await readyHost();
    // The host is killed before it can read the request.
    process.kill(spawnHost.pid!, "SIGSTOP");
    const child = spawnHost.spawn("sh", ["-c", "exit 0"], OPTIONS);
    const error = new Promise<NodeJS.ErrnoException>((resolve) => child.once("error", resolve));
    process.kill(spawnHost.pid!, "SIGKILL");
    expect((await error).code).toBe(SPAWN_HOST_EXITED);
  });
});
