// A stand-in container CLI for tests of how steps are handed to a runtime, on machines without
// Podman: `node fake-container-cli.cjs --log <file> <subcommand> ...`. It answers `image inspect`
// as if the image were present, and runs `run ... --entrypoint <shell> [--] <image> -c <script>` on
// this machine: the script through the shell's name on PATH, with only the `-e` variables (and
// PATH), in the host directory the `-w` workdir maps to through the `--mount`s. `kill <name>`
// kills that run's process group. Every invocation is appended to the log as one JSON line
// (`{ command, args }`), arguments exactly as received. Not a sandbox: only for tests.
"use strict";

const { spawn } = require("node:child_process");
const { appendFileSync, readFileSync, rmSync, writeFileSync } = require("node:fs");
const { basename } = require("node:path");

const argv = process.argv.slice(2);
if (argv[0] !== "--log" || argv[1] === undefined) {
  process.stderr.write("usage: fake-container-cli.cjs --log <file> <subcommand> ...\n");
  process.exit(2);
}
const log = argv[1];
const args = argv.slice(2);
const record = (command) => appendFileSync(log, `${JSON.stringify({ command, args })}\n`);
const pidFile = (name) => `${log}.${name}.pid`;

if (args[0] === "image" && args[1] === "inspect") {
  record("image inspect");
  process.stdout.write(JSON.stringify([{ Id: "sha256:fake", RepoDigests: [] }]));
  process.exit(0);
}

if (args[0] === "kill") {
  record("kill");
  const name = args[args.length - 1];
  try {
    process.kill(-Number(readFileSync(pidFile(name), "utf8")), "SIGKILL");
    process.exit(0);
  } catch {
    process.exit(1);
  }
}

if (args[0] !== "run") {
  record(args[0]);
  process.stderr.write(`fake container CLI: unsupported subcommand ${args[0]}\n`);
  process.exit(125);
}
record("run");

const WITH_VALUE = new Set([
  "--name",
  "--pull",
  "--network",
  "--user",
  "--userns",
  "--ulimit",
  "--mount",
  "-e",
  "-w",
  "--entrypoint",
]);
const options = { env: {}, mounts: [], name: "", workdir: undefined, entrypoint: undefined };
let index = 1;
for (; index < args.length; index += 1) {
  const argument = args[index];
  if (argument === "--rm") continue;
  // `--` ends the options; the image follows it.
  if (argument === "--") {
    index += 1;
    break;
  }
  if (!WITH_VALUE.has(argument)) break;
  const value = args[index + 1];
  index += 1;
  if (argument === "--name") options.name = value;
  else if (argument === "-w") options.workdir = value;
  else if (argument === "--entrypoint") options.entrypoint = value;
  else if (argument === "--mount") {
    const fields = Object.fromEntries(value.split(",").map((field) => field.split("=")));
    options.mounts.push({ source: fields.source, target: fields.target });
  } else if (argument === "-e") {
    const equals = value.indexOf("=");
    if (equals === -1) options.env[value] = process.env[value] ?? "";
    else options.env[value.slice(0, equals)] = value.slice(equals + 1);
  }
}
const rest = args.slice(index + 1);
if (options.entrypoint === undefined || rest[0] !== "-c" || rest.length !== 2) {
  process.stderr.write("fake container CLI: only --entrypoint <shell> <image> -c <script>\n");
  process.exit(125);
}

/** The host directory a container path lies in, through the longest mount that holds it. */
function hostPath(path) {
  const mount = options.mounts
    .filter((candidate) => path === candidate.target || path.startsWith(`${candidate.target}/`))
    .sort((left, right) => right.target.length - left.target.length)[0];
  return mount === undefined ? undefined : mount.source + path.slice(mount.target.length);
}

const cwd = options.workdir === undefined ? process.cwd() : hostPath(options.workdir);
const child = spawn(basename(options.entrypoint), ["-c", rest[1]], {
  cwd,
  env: { PATH: process.env.PATH, ...options.env },
  stdio: ["ignore", "inherit", "inherit"],
  detached: true,
});
writeFileSync(pidFile(options.name), String(child.pid));
child.on("close", (code, signal) => {
  rmSync(pidFile(options.name), { force: true });
  process.exit(code ?? (signal === null ? 1 : 137));
});
