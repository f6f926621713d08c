#!/usr/bin/env node
// The installed `deckhand` command, built as CommonJS (dist/bin/deckhand.cjs). Node starts a
// CommonJS file without its ES module loader, whose start (it reads the entry through the thread
// pool) made `deckhand version` cost about 4 ms more than `node -e 0`; so the version is printed
// from here, and every other command loads the ES module bundle (dist/bin/deckhand.mjs, from
// bin.ts), which is split so that each command loads only its own modules.
import { isVersionCommand, versionLine } from "./version-command.ts";

// A specifier the bundler leaves alone: the bundle beside this file, not a source module.
const bundle = "./deckhand.mjs";

if (isVersionCommand(process.argv[2])) {
  process.stdout.write(versionLine);
} else {
  import(bundle).catch((error: unknown) => {
    process.stderr.write(`deckhand: cannot load ${bundle}: ${String(error)}\n`);
    process.exitCode = 1;
  });
}
