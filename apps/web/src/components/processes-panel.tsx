import {
  PROCESS_SIGNAL_POSIX_NAMES,
  type ProcessInfo,
  type ProcessOutputResponse,
  type ProcessSignalName,
  type Truncation,
} from "@deckhand/wire";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { messageOf, server } from "../api.ts";

/** How often the list is read again: new processes and exits show within this. */
const LIST_INTERVAL_MS = 2_000;
/** Longest a follow request waits for new output before asking again. */
const FOLLOW_WAIT_MS = 25_000;
/** What the page keeps of one process's output: its newest characters, the rest dropped. */
export const OUTPUT_BUFFER_CHARS = 64 * 1024;
/** After a failed follow request, wait this long before the next (the server may be restarting). */
const RETRY_MS = 2_000;

/** In the order the buttons show, the gentlest first, with what each button says. */
const SIGNALS: { signal: ProcessSignalName; verb: string }[] = [
  { signal: "interrupt", verb: "Interrupt" },
  { signal: "terminate", verb: "Terminate" },
  { signal: "kill", verb: "Kill" },
];

interface FollowedOutput {
  text: string;
  /** How the workspace agent's head+tail buffer cut the output before the page read it. */
  truncated: Truncation | null;
  /** Bytes the page never saw: fell out of the agent's window between two reads. */
  missedBytes: number;
  /** Characters the page dropped itself to stay within `OUTPUT_BUFFER_CHARS`. */
  droppedChars: number;
  running: boolean;
}

const EMPTY: FollowedOutput = {
  text: "",
  truncated: null,
  missedBytes: 0,
  droppedChars: 0,
  running: true,
};

/** Keeps the newest `OUTPUT_BUFFER_CHARS` characters, counting what it drops. */
function bounded(output: FollowedOutput): FollowedOutput {
  const excess = output.text.length - OUTPUT_BUFFER_CHARS;
  if (excess <= 0) return output;
  return {
    ...output,
    text: output.text.slice(excess),
    droppedChars: output.droppedChars + excess,
  };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });

/**
 * A process's output, followed live: a snapshot first (head and tail, with how it was cut), then
 * long polls from its cursor until the process has exited.
 */
function useFollowedOutput(sessionId: string, processId: string, onExited: () => void) {
  const [output, setOutput] = useState<FollowedOutput>(EMPTY);
  const [error, setError] = useState<string | null>(null);
  const exited = useRef(onExited);
  exited.current = onExited;
  useEffect(() => {
    const controller = new AbortController();
    const params = { session_id: sessionId, process_id: processId };
    const read = (query: { cursor: number; wait: true; timeout_ms: number } | undefined) =>
      server.getSessionProcessOutput({ params, ...(query ? { query } : {}) });
    (async () => {
      let cursor: number | null = null;
      while (!controller.signal.aborted) {
        let answer: ProcessOutputResponse;
        try {
          answer =
            cursor === null
              ? await read(undefined)
              : await read({ cursor, wait: true, timeout_ms: FOLLOW_WAIT_MS });
        } catch (failure) {
          if (controller.signal.aborted) return;
          setError(messageOf(failure));
          await sleep(RETRY_MS, controller.signal);
          continue;
        }
        if (controller.signal.aborted) return;
        setError(null);
        const first = cursor === null;
        setOutput((previous) =>
          bounded({
            text: first ? answer.output : previous.text + answer.output,
            truncated: first ? answer.truncated : previous.truncated,
            missedBytes: previous.missedBytes + answer.missed_bytes,
            droppedChars: previous.droppedChars,
            running: answer.running,
          }),
        );
        cursor = answer.next_cursor;
        if (!answer.running) {
          exited.current();
          return;
        }
      }
    })();
    return () => controller.abort();
  }, [sessionId, processId]);
  return { output, error };
}

function duration(process: ProcessInfo, nowUnix: number): string {
  const seconds = Math.max(0, (process.exited_at_unix ?? nowUnix) - process.started_at_unix);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

function state(process: ProcessInfo): { label: string; status: string } {
  if (process.running) return { label: "running", status: "running" };
  if (process.signal !== null) return { label: `exited by ${process.signal}`, status: "failed" };
  return {
    label: `exit code ${process.exit_code ?? "unknown"}`,
    status: process.exit_code === 0 ? "completed" : "failed",
  };
}

function ProcessCard({
  sessionId,
  process,
  nowUnix,
  onChanged,
}: {
  sessionId: string;
  process: ProcessInfo;
  nowUnix: number;
  onChanged: () => void;
}) {
  const { output, error } = useFollowedOutput(sessionId, process.id, onChanged);
  const [signalError, setSignalError] = useState<string | null>(null);
  const [sending, setSending] = useState(false);
  const outputRef = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  // Follow the tail while the reader is at the bottom; leave the scroll alone once they scroll up.
  useLayoutEffect(() => {
    void output.text;
    const element = outputRef.current;
    if (element && following.current) element.scrollTop = element.scrollHeight;
  }, [output.text]);
  const send = async (signal: ProcessSignalName) => {
    setSending(true);
    setSignalError(null);
    try {
      await server.signalSessionProcess({
        params: { session_id: sessionId, process_id: process.id },
        body: { signal },
      });
      onChanged();
    } catch (failure) {
      setSignalError(messageOf(failure));
    } finally {
      setSending(false);
    }
  };
  const { label, status } = state(process);
  const cut = output.truncated;
  return (
    <section
      className="card process"
      aria-label={`Process ${process.command}`}
      data-process-id={process.id}
    >
      <header className="card-header">
        <code className="tool-title">{process.command}</code>
        <span className="badge" data-status={status}>
          {label}
        </span>
      </header>
      <dl className="facts">
        <dt>cwd</dt>
        <dd>
          <code>{process.workdir}</code>
        </dd>
        <dt>duration</dt>
        <dd>{duration(process, nowUnix)}</dd>
        {process.background && (
          <>
            <dt>mode</dt>
            <dd>background</dd>
          </>
        )}
      </dl>
      {(cut !== null || output.missedBytes > 0 || output.droppedChars > 0) && (
        <p className="muted truncation">
          {cut !== null &&
            `Output truncated: ${cut.omitted_bytes} of ${cut.original_bytes} bytes omitted from the middle. `}
          {output.missedBytes > 0 && `${output.missedBytes} bytes were missed while following. `}
          {output.droppedChars > 0 &&
            `${output.droppedChars} earlier characters are no longer shown here.`}
        </p>
      )}
      <pre
        ref={outputRef}
        className="output"
        // Scrollable, so keyboard users must be able to reach it.
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region needs focus to scroll by keyboard
        tabIndex={0}
        // A log, but not read out as it grows: a ticking process would drown everything else.
        role="log"
        aria-live="off"
        aria-label={`Output of ${process.command}`}
        onScroll={(event) => {
          const element = event.currentTarget;
          following.current = element.scrollHeight - element.scrollTop - element.clientHeight < 24;
        }}
      >
        {output.text || (output.running ? "" : "(no output)")}
      </pre>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {signalError && (
        <p className="error" role="alert">
          {signalError}
        </p>
      )}
      {process.group_running && (
        <div className="actions">
          {SIGNALS.map(({ signal, verb }) => (
            <button
              key={signal}
              type="button"
              className={signal === "kill" ? "danger" : undefined}
              disabled={sending}
              title={`Sends ${PROCESS_SIGNAL_POSIX_NAMES[signal]} to the process and everything it started`}
              onClick={() => void send(signal)}
            >
              {verb} ({PROCESS_SIGNAL_POSIX_NAMES[signal]})
            </button>
          ))}
        </div>
      )}
    </section>
  );
}

/** The session's processes: command, cwd, state and duration, live output, signal buttons. */
export function ProcessesPanel({
  sessionId,
  onCount,
}: {
  sessionId: string;
  /** Told how many processes the session has, whenever that changes (for the pane's tab). */
  onCount?: (count: number) => void;
}) {
  const [processes, setProcesses] = useState<ProcessInfo[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [nowUnix, setNowUnix] = useState(() => Math.floor(Date.now() / 1000));
  const load = useCallback(async () => {
    try {
      const list = await server.listSessionProcesses({ params: { session_id: sessionId } });
      setProcesses(list.processes);
      onCount?.(list.processes.length);
      setNowUnix(Math.floor(Date.now() / 1000));
      setError(null);
    } catch (failure) {
      setError(messageOf(failure));
    }
  }, [sessionId, onCount]);
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), LIST_INTERVAL_MS);
    return () => clearInterval(timer);
  }, [load]);
  const changed = useCallback(() => void load(), [load]);
  return (
    <section className="processes" aria-labelledby="processes-heading">
      <h2 id="processes-heading">Processes ({processes.length})</h2>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {processes.length === 0 && <p className="muted">No processes started in this session.</p>}
      {processes.map((process) => (
        <ProcessCard
          key={process.id}
          sessionId={sessionId}
          process={process}
          nowUnix={nowUnix}
          onChanged={changed}
        />
      ))}
    </section>
  );
}
