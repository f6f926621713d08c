// A process for the crash test of the embedded database:
//   node --conditions=source test/write-then-wait-process.ts <data-dir> <value>
// opens the embedded database there (a new directory starts from the migrated template), commits
// a row holding <value>, prints {"written":true} and waits, so the test can kill it with SIGKILL:
// the database is never closed and its next open has to recover from the WAL.
import { createDb } from "../src/index.ts";

const [dataDir, value] = process.argv.slice(2);
if (!dataDir || value === undefined) {
  console.error("usage: write-then-wait-process.ts <data-dir> <value>");
  process.exit(64);
}
const database = await createDb({ dataDir });
await database.query("create table if not exists crash_check (value text not null)");
await database.query("insert into crash_check (value) values ($1)", [value]);
process.stdout.write(`${JSON.stringify({ written: true })}\n`);
setInterval(() => {}, 1 << 30);
