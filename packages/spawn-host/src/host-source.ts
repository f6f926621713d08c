// The program of the spawn host, run with `node -e` so that it needs no file of its own on disk
// (a built package, the sources and a checkout under a masked /tmp all start it the same way).
// It is plain JavaScript: Node runs it before any loader or type stripping could apply.
//
// One request: { type: "exec", id, file, args, cwd, env, input, maxBuffer, timeoutMs,
// killSignal, aborted }, answered by { type: "done", id, stdout, stderr, error }, where `error`
// carries the fields of the `execFile` error (name, message, code, killed, signal, …) or is null;
// { type: "thrown", id, error } when `execFile` threw instead (an argument it refuses).
// { type: "abort", id } aborts a running request as an AbortSignal given to `execFile` would.
// The host says { type: "ready" } once it listens; until then its parent runs commands itself.
//
// The host ignores SIGINT: a Ctrl-C in a terminal reaches the whole foreground group, and the
// process that started it decides what a Ctrl-C means (a graceful shutdown runs git still).
// It exits when that process goes away (its IPC channel closes), leaving what it started
// running as that process would have left them.
export const SPAWN_HOST_SOURCE = `"use strict";
const { execFile } = require("node:child_process");
const running = new Map();
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
});
process.send({ type: "ready" });
`;
