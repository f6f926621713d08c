// The embedded database alone, idle: a Node process that opens (and migrates) a PGlite data
// directory the way the server does, says `ready` and waits. bench/up-memory.ts weighs it beside
// `deckhand up`, as the part of the server's memory the database is bound to take.
//
//   node --conditions=source bench/support/idle-database.ts DATA_DIR
import { createDb } from "@deckhand/db";

const dataDir = process.argv[2];
if (dataDir === undefined) throw new Error("usage: idle-database.ts DATA_DIR");
const database = await createDb({ dataDir });
process.stdout.write("ready\n");
const keepAlive = setInterval(() => {}, 60_000);
process.once("SIGTERM", async () => {
  clearInterval(keepAlive);
  await database.close();
});
