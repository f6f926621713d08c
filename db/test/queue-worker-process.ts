// A worker process for the multi-process queue test:
//   node --conditions=source test/queue-worker-process.ts <database-url> <task-type> <worker-id> <handler-ms> <lease-ms>
// Each task logs "started" and "finished" rows, so the test can tell what ran where and whether
// a run was cut short. Prints "ready" once it listens; SIGTERM stops it gracefully.
import { createDb, TaskRegistry, TaskWorker } from "../src/index.ts";

const [databaseUrl, type, workerId, handlerMs, leaseMs] = process.argv.slice(2);
if (!databaseUrl || !type || !workerId || !handlerMs || !leaseMs) {
  console.error("usage: queue-worker-process.ts <url> <type> <worker-id> <handler-ms> <lease-ms>");
  process.exit(2);
}

const database = await createDb({ databaseUrl, migrate: false, poolSize: 4 });
const registry = new TaskRegistry().register(type, {
  async handle(_payload, context) {
    await database.query(
      "insert into queue_test_log (task_id, worker_id, phase) values ($1, $2, 'started')",
      [context.id, workerId],
    );
    await new Promise((resolve) => setTimeout(resolve, Number(handlerMs)));
    await database.query(
      "insert into queue_test_log (task_id, worker_id, phase) values ($1, $2, 'finished')",
      [context.id, workerId],
    );
  },
});
const worker = new TaskWorker({
  database,
  registry,
  workerId,
  concurrency: 2,
  leaseMs: Number(leaseMs),
  pollIntervalMs: 200,
  onError: (error) => console.error(error),
});
await worker.start();
process.stdout.write("ready\n");

process.once("SIGTERM", () => {
  void (async () => {
    await worker.stop();
    await database.close();
    process.exit(0);
  })();
});
