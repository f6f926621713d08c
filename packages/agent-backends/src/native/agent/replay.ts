import type { AgentEvent } from "@deckhand/wire";
import { AgentBackendError } from "../../errors.ts";
import type { NativeBackend } from "./native-agent.ts";
import type { RecordEntry } from "./recorder.ts";

export interface ReplayOptions {
  /** How long to wait for the events due before a submission. Default 10 s. */
  timeoutMs?: number;
}

/**
 * Feeds a recording's submissions to a backend in their recorded order, each one once the
 * backend has emitted as many events as the recording holds before it: an approval goes in
 * after its permission request, an injected input after the tool call it interrupted. Against
 * the same model script this reproduces the session; resolves with the events emitted, for a
 * test to compare with the recording's. A replay that falls behind its recording (a different
 * model script, a changed loop) fails with the counts rather than hanging.
 */
export async function replaySubmissions(
  backend: NativeBackend,
  entries: readonly RecordEntry[],
  options: ReplayOptions = {},
): Promise<AgentEvent[]> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  await backend.ensureSession();
  const events: AgentEvent[] = [];
  let wake = () => {};
  const unsubscribe = backend.subscribe((event) => {
    events.push(event);
    wake();
  });
  const eventsReach = (count: number) =>
    new Promise<void>((resolveReach, rejectReach) => {
      const timer = setTimeout(() => {
        wake = () => {};
        rejectReach(
          new AgentBackendError(
            "internal",
            `replay diverged: expected ${count} events before the next submission, saw ${events.length}`,
          ),
        );
      }, timeoutMs);
      wake = () => {
        if (events.length < count) return;
        clearTimeout(timer);
        wake = () => {};
        resolveReach();
      };
      wake();
    });
  try {
    let before = 0;
    for (const entry of entries) {
      if (entry.kind === "event") before += 1;
      if (entry.kind !== "submission") continue;
      await eventsReach(before);
      backend.submit(entry.submission);
    }
    await eventsReach(before);
    await backend.idle();
    return events;
  } finally {
    unsubscribe();
  }
}
