// The repositories and spec of the batch-run benchmark, shared with its profiler
// (bench/profile-batch-run.ts): small repositories with one commit each, and a spec whose steps
// sleep and append a line.
import { join } from "node:path";
import { createRepository } from "./deckhand-process.ts";

export const STEP_SECONDS = Number(process.env.BATCH_BENCH_STEP_SECONDS ?? 0.2);

/** `count` small repositories under `root/bench/`, each with one commit on main. */
export function generateRepositories(root: string, count: number): string[] {
  const paths: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const path = join(root, "bench", `repo-${String(index).padStart(3, "0")}`);
    const files: Record<string, string> = { "README.md": `# repo ${index}\n` };
    for (let file = 0; file < 20; file += 1) {
      files[`src/file-${file}.txt`] = `line ${file}\n`.repeat(50);
    }
    createRepository(path, files);
    paths.push(path);
  }
  return paths;
}

export function stepScript(step: number): string {
  return `sleep ${STEP_SECONDS}; echo "step ${step}" >> CHANGES.md`;
}

export function specYaml(steps: string[], container?: string): string {
  const stepLines = steps
    .map(
      (run) =>
        `  - run: ${JSON.stringify(run)}${container ? `\n    container: ${container}` : "\n    container: alpine:3"}`,
    )
    .join("\n");
  return `name: bench
on:
  - repositoriesMatchingQuery: repo:^bench/
steps:
${stepLines}
changesetTemplate:
  title: Bench
  branch: bench
  commit:
    message: bench
`;
}

/** What following a run needs of its event hub (`createRunEventHub`). */
interface RunFeed {
  subscribe(options: {
    key: string;
    afterId: number;
    deliver(event: { event: { type: string } }): void;
    onError?(error: unknown): void;
  }): { close(): void };
}

/**
 * Resolves when the run's `run_finished` event is stored: the run followed as `deckhand batch`
 * follows it, through the run's event feed (woken by its NOTIFY), not by reading the whole run
 * over and over (which the run's own jobs would pay for).
 */
export function runFinished(feed: RunFeed, runId: string): Promise<void> {
  return new Promise((resolveFinished, rejectFinished) => {
    const subscription = feed.subscribe({
      key: runId,
      afterId: 0,
      deliver(stored) {
        if (stored.event.type !== "run_finished") return;
        subscription.close();
        resolveFinished();
      },
      onError(error) {
        subscription.close();
        rejectFinished(error);
      },
    });
  });
}

/** The statements following a run's feed sent (its reads of new events), of a counter's texts. */
export function followerStatements(texts: Iterable<[string, number]>): number {
  let count = 0;
  for (const [text, times] of texts) {
    if (text.startsWith("select") && text.includes('from "batch_run_events"')) count += times;
  }
  return count;
}
