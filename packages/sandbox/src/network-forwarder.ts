// The first process inside a sandbox without a network of its own: it listens on the sandbox's
// loopback where the agent expects the model proxy (and, with an allow list, an HTTP proxy), and
// carries each connection to a Unix socket bound in from outside, where the server answers only
// model-proxy routes and allowed hosts. Then it runs the command and exits as the command does.
//
// It runs as `node -e`: the source below is plain JavaScript with no imports of Deckhand's own, so
// it works the same from the checkout and from a bundled install, with no file to locate. The
// checks it implies all happen outside, where the sandboxed process cannot change them.

/** Where the sockets are bound inside every sandbox (its private /tmp). */
export const INNER_SOCKET_DIRECTORY = "/tmp/.deckhand-sandbox";

export interface ForwarderConfig {
  /** Loopback ports inside the sandbox, each carried to a socket. */
  listen: { port: number; socket: string }[];
  /** How many descriptors beyond stdin, stdout and stderr the command inherits. */
  extraFds: number;
  /** NODE_OPTIONS as the caller set it: kept from the forwarder, given back to the command. */
  nodeOptions: string | null;
}

export const FORWARDER_SOURCE = `
"use strict";
const net = require("node:net");
const { spawn } = require("node:child_process");
const [configText, executable, ...args] = process.argv.slice(1);
const config = JSON.parse(configText);
let waiting = config.listen.length * 2;
const start = () => {
  const env = { ...process.env };
  if (config.nodeOptions !== null) env.NODE_OPTIONS = config.nodeOptions;
  const stdio = ["inherit", "inherit", "inherit"];
  for (let fd = 3; fd < 3 + config.extraFds; fd++) stdio.push(fd);
  const child = spawn(executable, args, { stdio, env });
  // Signals reach the whole process group, the command included; the forwarder waits for it.
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => {});
  child.once("error", (error) => {
    process.stderr.write("deckhand sandbox: cannot start " + executable + ": " + error.message + "\\n");
    process.exit(error.code === "ENOENT" ? 127 : 126);
  });
  child.once("exit", (code, signal) => {
    if (signal === null) process.exit(code === null ? 1 : code);
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  });
};
const listening = () => {
  waiting -= 1;
  if (waiting === 0) start();
};
for (const { port, socket } of config.listen) {
  for (const host of ["127.0.0.1", "::1"]) {
    const server = net.createServer((client) => {
      const upstream = net.connect(socket);
      client.pipe(upstream).pipe(client);
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    // A sandbox without IPv6 on its loopback still forwards IPv4.
    server.once("error", listening);
    server.listen({ port, host, ipv6Only: host === "::1" }, listening);
    server.unref();
  }
}
if (waiting === 0) start();
`;
