#!/usr/bin/env node
import { runCli } from "./commands.ts";

process.exitCode = await runCli(process.argv.slice(2));
// Lets a finished command exit even if a library left a handle open, without cutting
// short output that is still being flushed.
setTimeout(() => process.exit(), 2_000).unref();
