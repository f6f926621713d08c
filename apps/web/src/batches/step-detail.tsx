import type { BatchStepDetail, BatchWorkspaceStep } from "@deckhand/wire";
import { useEffect, useState } from "react";
import { messageOf, server } from "../api.ts";
import { DiffView } from "../components/diff-view.tsx";
import { AgentTranscript, StepEnvironment } from "./step-panels.tsx";

/** "4.2s", "3m 5s": how long a step or workspace ran. */
export function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 100) / 10;
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m ${Math.round(seconds - minutes * 60)}s`;
}

/** A step's time so far: ticking while it runs, else what it took. */
export function stepElapsed(step: BatchWorkspaceStep, now: number): number {
  if (step.outcome === "running" && step.started_at)
    return Math.max(0, now - Date.parse(step.started_at));
  return step.duration_ms;
}

type StepTab = "logs" | "outputs" | "diff" | "environment" | "transcript";

/** A step's logs, outputs and diff, loaded when opened and again as the step moves on. */
export function StepDetail({
  workspaceId,
  step,
  liveLog,
}: {
  workspaceId: string;
  step: BatchWorkspaceStep;
  liveLog: { stdout: string; stderr: string } | undefined;
}) {
  const [tab, setTab] = useState<StepTab>("logs");
  const [detail, setDetail] = useState<BatchStepDetail | null>(null);
  const [error, setError] = useState<string | null>(null);
  // Loaded again when the step moves on (running → finished), for its final logs and diff.
  // biome-ignore lint/correctness/useExhaustiveDependencies: step.outcome is that trigger.
  useEffect(() => {
    let live = true;
    server
      .getBatchWorkspaceStep({
        params: { workspace_id: workspaceId, step_index: String(step.step_index) },
      })
      .then((loaded) => live && setDetail(loaded))
      .catch((failure: unknown) => live && setError(messageOf(failure)));
    return () => {
      live = false;
    };
  }, [workspaceId, step.step_index, step.outcome]);
  const tabs: { id: StepTab; label: string }[] = [
    ...(detail?.agent ? [{ id: "transcript" as const, label: "Transcript" }] : []),
    { id: "logs", label: "Logs" },
    { id: "outputs", label: "Outputs" },
    { id: "diff", label: "Diff" },
    { id: "environment", label: "Environment" },
  ];
  const prefix = `step-${workspaceId}-${step.step_index}`;
  const stdout = step.outcome === "running" && liveLog ? liveLog.stdout : (detail?.stdout ?? "");
  const stderr = step.outcome === "running" && liveLog ? liveLog.stderr : (detail?.stderr ?? "");
  return (
    <div className="step-detail">
      {detail?.command != null && (
        <details className="step-command">
          <summary>Command</summary>
          <pre className="output">{detail.command}</pre>
        </details>
      )}
      <div role="tablist" aria-label={`Step ${step.step_index}`} className="tabs">
        {tabs.map((entry) => (
          <button
            key={entry.id}
            type="button"
            role="tab"
            id={`${prefix}-${entry.id}`}
            aria-selected={tab === entry.id}
            aria-controls={`${prefix}-panel`}
            onClick={() => setTab(entry.id)}
          >
            {entry.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`${prefix}-panel`} aria-labelledby={`${prefix}-${tab}`}>
        {error && <p className="error">{error}</p>}
        {tab === "transcript" && detail?.agent && (
          <AgentTranscript agent={detail.agent} jobId={detail.job_id} />
        )}
        {tab === "environment" && <StepEnvironment env={detail?.env ?? null} />}
        {tab === "logs" && (
          <>
            <h4>stdout</h4>
            <pre className="output">{stdout || "(empty)"}</pre>
            <h4>stderr</h4>
            <pre className="output">{stderr || "(empty)"}</pre>
          </>
        )}
        {tab === "outputs" && (
          <pre className="output">
            {detail && Object.keys(detail.outputs).length > 0
              ? JSON.stringify(detail.outputs, null, 2)
              : "(no outputs)"}
          </pre>
        )}
        {tab === "diff" &&
          (detail?.diff ? <DiffView diff={detail.diff} /> : <p className="muted">No changes.</p>)}
      </div>
    </div>
  );
}
