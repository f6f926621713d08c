// A process for the memory tests of the embedded database:
//   node --conditions=source test/open-memory-process.ts <data-dir>
// opens the embedded database there (a new directory starts from the migrated template), prints
// its process.memoryUsage() as JSON, and closes it. A process of its own, so that what the open
// left in memory is not mixed with what other tests of the same worker allocated.
import { createDb } from "../src/index.ts";

const dataDir = process.argv[2];
if (!dataDir) {
  console.error("usage: open-memory-process.ts <data-dir>");
  process.exit(64);
}
const database = await createDb({ dataDir });
process.stdout.write(`${JSON.stringify(process.memoryUsage())}\n`);
await database.close();
