// A process for the data-directory lock tests:
//   node --conditions=source test/data-dir-lock-process.ts open <data-dir>
//     opens the embedded database there; prints {"opened":true} and holds it until SIGTERM.
//   node --conditions=source test/data-dir-lock-process.ts race <data-dir>
//     takes the lock; on finding it stale prints {"stale":true} and waits for a line on stdin
//     before taking it over (so several can be held at the point of the race and released at
//     once); prints {"acquired":true} and holds it until SIGTERM.
// Either way a lock held by another process prints {"code":"data_dir_locked","holderPid":N}
// and exits 2.
import { createInterface } from "node:readline";
import { lockDataDir } from "../src/data-dir-lock.ts";
import { createDb, DataDirLockedError } from "../src/index.ts";

const [mode, dataDir] = process.argv.slice(2);
if ((mode !== "open" && mode !== "race") || !dataDir) {
  console.error("usage: data-dir-lock-process.ts open|race <data-dir>");
  process.exit(64);
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/**
 * Installs the SIGTERM handler that releases what is held. It must be in place before the line
 * saying so is printed: the test may signal the moment it reads that line, and without a
 * handler SIGTERM's default action would end the process before it releases anything.
 */
function holding(release: () => Promise<void>): void {
  // Nothing else need keep the process alive while it holds the lock.
  const keepAlive = setInterval(() => {}, 1 << 30);
  let stopping = false;
  process.on("SIGTERM", () => {
    if (stopping) return;
    stopping = true;
    clearInterval(keepAlive);
    void release().then(() => process.exit(0));
  });
}

try {
  if (mode === "open") {
    const database = await createDb({ dataDir, migrate: false });
    holding(() => database.close());
    print({ opened: true });
  } else {
    const lines = createInterface({ input: process.stdin });
    const nextLine = () => new Promise((resolveLine) => lines.once("line", resolveLine));
    let held = false;
    const lock = await lockDataDir(dataDir, {
      // The first time only: every racer stops here, having read the same stale lock.
      async onStaleHolder() {
        if (held) return;
        held = true;
        print({ stale: true });
        await nextLine();
      },
    });
    lines.close();
    holding(() => lock.release());
    print({ acquired: true });
  }
} catch (error) {
  if (!(error instanceof DataDirLockedError)) throw error;
  print({ code: error.code, holderPid: error.holder.pid });
  process.exit(2);
}
