// Entry point of the standalone agent bundle (dist/deckhand-agent.mjs).
import { runAgentUntilSignalled } from "./run.ts";

process.exitCode = await runAgentUntilSignalled(process.argv.slice(2));
// Normally nothing is left and Node exits by itself; the timer (which does not keep the
// process alive) only guards against a stray handle holding a stopped agent open.
setTimeout(() => process.exit(), 2_000).unref();
