// The program of the spawn host, run with `node -e` so that it needs no file of its own on disk
// (a built package, the sources and a checkout under a masked /tmp all start it the same way).
// It is plain JavaScript: Node runs it before any loader or type stripping could apply.
//
// One request: { type: "exec", id, file, args, cwd, env, input, maxBuffer, timeoutMs,
// killSignal, aborted }, answered by { type: "done", id, stdout, stderr, error }, where `error`
// carries the fields of the `execFile` error (name, message, code, killed, signal, …) or is null;
// { type: "thrown", id, error } when `execFile` threw instead (an argument it refuses).
// { type: "abort", id } aborts a running request as an AbortSignal given to `execFile` would.
//
// A process whose output streams for its whole life (a batch step): { type: "spawn", id, file,
// args, cwd, env, detached, stdio } starts it with `spawn` and answers { type: "spawned", id,
// pid, fds }, then one { type: "pipe", id, fd } per descriptor in `fds` carrying that pipe as a
// handle (its data then flows between the process and the parent without passing through here),
// and { type: "exit", id, code, signal } when it exits; { type: "spawn-failed", id, error } when
// it could not start. { type: "kill", id, signal } signals it as `ChildProcess#kill` does.
// The host says { type: "ready" } once it listens; until then its parent runs commands itself.
//
// The host ignores SIGINT: a Ctrl-C in a terminal reaches the whole foreground group, and the
// process that started it decides what a Ctrl-C means (a graceful shutdown runs git still).
// It exits when that process goes away (its IPC channel closes), leaving what it started
// running as that process would have left them.
export const SPAWN_HOST_SOURCE = `"use strict";
const { execFile, spawn } = require("node:child_process");
const running = new Map();
const children = new Map();
const ERROR_FIELDS = ["name", "message", "code", "killed", "signal", "errno", "syscall", "path", "cmd"];
function serializeError(error) {
  const fields = {};
  for (const name of ERROR_FIELDS) {
    if (error[name] !== undefined) fields[name] = error[name];
  }
  return fields;
}
function exec(request) {
  const controller = new AbortController();
  running.set(request.id, controller);
  const child = execFile(
    request.file,
    request.args,
    {
      cwd: request.cwd,
      env: request.env,
      encoding: "utf8",
      maxBuffer: request.maxBuffer,
      timeout: request.timeoutMs,
      killSignal: request.killSignal,
      signal: controller.signal,
    },
    (error, stdout, stderr) => {
      running.delete(request.id);
      if (!process.connected) return;
      process.send({
        type: "done",
        id: request.id,
        stdout,
        stderr,
        error: error === null ? null : serializeError(error),
      });
    },
  );
  child.stdin?.on("error", () => {});
  child.stdin?.end(request.input);
  if (request.aborted) controller.abort();
}
function start(request) {
  const child = spawn(request.file, request.args, {
    cwd: request.cwd,
    env: request.env,
    detached: request.detached,
    stdio: request.stdio,
  });
  if (child.pid === undefined) {
    child.once("error", (error) => {
      process.send({ type: "spawn-failed", id: request.id, error: serializeError(error) });
    });
    return;
  }
  children.set(request.id, child);
  const fds = [];
  child.stdio.forEach((stream, fd) => {
    if (stream === null || stream === undefined) return;
    // Node starts reading a pipe as soon as it wraps it: stop before the loop can read anything
    // here, or the first output would be read by this process and lost when the pipe is sent.
    stream._handle.reading = false;
    stream._handle.readStop();
    fds.push(fd);
  });
  process.send({ type: "spawned", id: request.id, pid: child.pid, fds });
  // Messages after a handle wait for its acknowledgement: the exit always follows the pipes.
  for (const fd of fds) process.send({ type: "pipe", id: request.id, fd }, child.stdio[fd]);
  child.once("exit", (code, signal) => {
    children.delete(request.id);
    if (process.connected) process.send({ type: "exit", id: request.id, code, signal });
  });
}
process.on("SIGINT", () => {});
process.on("disconnect", () => process.exit(0));
process.on("message", (message) => {
  if (message.type === "exec") {
    // What execFile throws (an argument it refuses) is that command's answer: the host, and
    // the commands it runs for others, go on.
    try {
      exec(message);
    } catch (error) {
      running.delete(message.id);
      process.send({ type: "thrown", id: message.id, error: serializeError(error) });
    }
  }
  else if (message.type === "abort") running.get(message.id)?.abort();
  else if (message.type === "spawn") {
    try {
      start(message);
    } catch (error) {
      process.send({ type: "spawn-failed", id: message.id, error: serializeError(error) });
    }
  }
  else if (message.type === "kill") children.get(message.id)?.kill(message.signal);
});
process.send({ type: "ready" });
`;
