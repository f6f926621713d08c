// Entry point of a standalone server bundle: `node main.js [--listen ...]` with DATABASE_URL.
import { runServerUntilSignalled } from "./run.ts";

process.exitCode = await runServerUntilSignalled(process.argv.slice(2));
// Normally nothing is left and Node exits by itself; the unref'd timer only guards against a
// stray handle holding a stopped server open.
setTimeout(() => process.exit(), 2_000).unref();
