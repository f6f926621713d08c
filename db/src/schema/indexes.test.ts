import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends, openTestDatabase, type TestDatabase } from "../../test/database-fixtures.ts";

const someId = "00000000-0000-4000-8000-000000000000";

/**
 * The statements the server and the queue run on tables that grow, in the shape they take
 * (apps/server/src/*.ts, src/queue/*.ts), each with the index meant to serve it. The plan must
 * use that index, scan no table sequentially and, where the order comes from the index, not
 * sort the whole result.
 */
const queries: { name: string; index: string; text: string; ordered?: boolean }[] = [
  {
    name: "project list",
    index: "projects_created_idx",
    text: "select * from projects order by created_at desc",
    ordered: true,
  },
  {
    name: "API token list",
    index: "api_tokens_created_idx",
    text: "select * from api_tokens order by created_at",
    ordered: true,
  },
  {
    name: "sessions of a project",
    index: "sessions_project_idx",
    text: `select * from sessions where project_id = '${someId}' order by created_at desc`,
    ordered: true,
  },
  {
    name: "chats of a session",
    index: "chats_session_idx",
    text: `select * from chats where session_id = '${someId}' order by created_at`,
    ordered: true,
  },
  {
    name: "messages of a chat",
    index: "messages_chat_idx",
    text: `select * from messages where chat_id = '${someId}' order by created_at`,
    ordered: true,
  },
  {
    name: "pending changes of a session",
    index: "pending_changes_session_idx",
    text: `select * from pending_changes where session_id = '${someId}' and status = 'pending'
      order by created_at`,
    ordered: true,
  },
  {
    name: "session events after a cursor",
    index: "session_events_session_idx",
    text: `select * from session_events where session_id = '${someId}' and id > 10
      order by id limit 500`,
    ordered: true,
  },
  {
    name: "usage of a job",
    index: "model_usage_job_idx",
    text: "select * from model_usage where job_id = 'job-1' order by created_at",
    ordered: true,
  },
  {
    name: "live agent session",
    index: "agent_sessions_live_idx",
    text: `select id from agent_sessions where session_id = '${someId}' and agent_type = 'codex'
      and chat_id is null and status <> 'closed'`,
  },
  {
    name: "succeeded-task retention sweep",
    index: "tasks_succeeded_completed_idx",
    text: `delete from tasks where id in (
      select id from tasks where status = 'succeeded' and type = any(array['a', 'b'])
        and completed_at < now() - interval '7 days' limit 1000)`,
  },
  {
    name: "expired leases",
    index: "tasks_lease_idx",
    text: `select id from tasks where status = 'running' and locked_until < now()
      and type = any(array['a'])`,
  },
  {
    name: "next due task",
    index: "tasks_claim_idx",
    text: "select min(run_at) from tasks where status = 'pending' and type = any(array['a'])",
  },
];

describe.each(backends)("indexes on %s", (kind) => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await openTestDatabase(kind);
  });
  afterAll(async () => {
    await database?.dispose();
  });

  async function plan(text: string): Promise<string> {
    // With sequential scans and sorts priced out, the planner uses an index (in its order)
    // whenever one can answer the query; a sequential scan or sort left in the plan means none
    // can. Bitmap scans are priced out too: they lose the index's order.
    return await database.handle.db.transaction(async (tx) => {
      for (const setting of ["enable_seqscan", "enable_bitmapscan", "enable_sort"]) {
        await tx.execute(sql.raw(`set local ${setting} = off`));
      }
      // Both drivers answer with `{rows}`; the shared database type leaves the result open.
      const result = (await tx.execute(sql.raw(`explain ${text}`))) as {
        rows: { "QUERY PLAN": string }[];
      };
      return result.rows.map((row) => row["QUERY PLAN"]).join("\n");
    });
  }

  it.each(queries)("serves the $name from $index", async ({ text, index, ordered }) => {
    const explained = await plan(text);
    expect(explained).toContain(` ${index} on `);
    expect(explained).not.toMatch(/Seq Scan/);
    // "Incremental Sort" (a tie-break within an index's order) is fine; a full Sort is not.
    if (ordered) expect(explained).not.toMatch(/(^|->\s+)Sort\b/m);
  });

  it("has an index leading with the columns of every foreign key", async () => {
    // Deleting a parent row (ON DELETE CASCADE or SET NULL) looks up the children by the
    // foreign-key columns; without an index that lookup scans the whole child table.
    const { rows } = await database.handle.query<{ constraint: string }>(
      `select c.conrelid::regclass::text || '.' || c.conname as constraint
       from pg_constraint c
       join pg_namespace n on n.oid = c.connamespace
       where c.contype = 'f' and n.nspname = 'public'
         and not exists (
           select 1 from pg_index i
           where i.indrelid = c.conrelid and i.indpred is null
             and (i.indkey::int2[])[0:array_length(c.conkey, 1) - 1] = c.conkey
         )
       order by 1`,
    );
    expect(rows.map((row) => row.constraint)).toEqual([]);
  });
});
