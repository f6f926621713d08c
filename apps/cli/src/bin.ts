#!/usr/bin/env node
import { homedir } from "node:os";
import { restartWithBoundedMallocArenas } from "./bounded-malloc-arenas.ts";
import { enableModuleCaches } from "./module-caches.ts";

// Before anything else: `deckhand up` may start again under a malloc setting glibc reads only at exec.
restartWithBoundedMallocArenas();

// Compiling a command's modules (zod and the batch engine alone are over a megabyte of
// JavaScript) is most of a short command's start-up; Node's on-disk code cache (in Deckhand's
// cache directory; NODE_DISABLE_COMPILE_CACHE=1 turns it off) skips it from the second run, and
// from the sources the stripped TypeScript is kept too (module-caches.ts says why). The
// commands' modules are imported after this line, so they all benefit.
enableModuleCaches({
  // This file is bin.ts when Node runs the sources, and part of a .mjs chunk once bundled.
  fromSources: import.meta.url.endsWith(".ts"),
  environment: process.env,
  home: homedir(),
});
const { runCli } = await import("./commands.ts");

process.exitCode = await runCli(process.argv.slice(2));
// Lets a finished command exit even if a library left a handle open, without cutting
// short output that is still being flushed.
setTimeout(() => process.exit(), 2_000).unref();
