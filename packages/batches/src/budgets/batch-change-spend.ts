// A batch change's model spend: every workspace job of every run of it, each changeset's (its
// workspace's: changesets of one workspace share it) and per merged pull request.
import { batchRuns, batchSpecs, type Database, workspaces } from "@deckhand/db";
import { addSpend, emptySpend, type SpendLedger } from "@deckhand/model-proxy";
import { type BatchChangeSpend, UsageJobId } from "@deckhand/wire";
import { eq } from "drizzle-orm";

export async function batchChangeSpend(
  db: Database,
  ledger: SpendLedger,
  input: {
    name: string;
    changesets: readonly { id: string; workspaceId: string }[];
    merged: number;
  },
): Promise<BatchChangeSpend> {
  const rows = await db
    .select({ id: workspaces.id })
    .from(workspaces)
    .innerJoin(batchRuns, eq(batchRuns.id, workspaces.batchRunId))
    .innerJoin(batchSpecs, eq(batchSpecs.id, batchRuns.batchSpecId))
    .where(eq(batchSpecs.name, input.name));
  const byJob = await ledger.spentByJob(rows.map((row) => UsageJobId.batchWorkspace(row.id)));
  const empty = emptySpend(ledger.prices);
  const total = [...byJob.values()].reduce(addSpend, empty);
  const { merged } = input;
  return {
    total,
    merged,
    per_merged:
      merged === 0
        ? null
        : { tokens: total.tokens / merged, cost: total.cost === null ? null : total.cost / merged },
    changesets: input.changesets.map((changeset) => ({
      changeset_id: changeset.id,
      spent: byJob.get(UsageJobId.batchWorkspace(changeset.workspaceId)) ?? empty,
    })),
    currency: ledger.prices.currency,
  };
}
