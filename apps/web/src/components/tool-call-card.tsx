import type { ToolCallPartContent } from "@deckhand/wire";
import { DiffView, isUnifiedDiff } from "./diff-view.tsx";

type Fields = Record<string, unknown>;

function field(source: unknown, ...names: string[]): unknown {
  if (typeof source !== "object" || source === null) return undefined;
  for (const name of names) {
    const value = (source as Fields)[name];
    if (value !== undefined && value !== null) return value;
  }
  return undefined;
}

function asText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((item) => typeof item === "string"))
    return value.join(" ");
  return JSON.stringify(value, null, 2);
}

/** "1.2 s" or "340 ms": how long a command ran, as the agent measured it. */
export function formatDuration(milliseconds: number): string {
  return milliseconds < 1000
    ? `${Math.round(milliseconds)} ms`
    : `${(milliseconds / 1000).toFixed(1)} s`;
}

/**
 * What the agent cut from a command's output before the model saw it: head+tail truncation
 * reports bytes (`omitted_bytes` of `original_bytes`), other agents only a flag.
 */
export function truncationNote(truncated: unknown): string | undefined {
  if (truncated === true) return "output truncated by the agent";
  const omitted = field(truncated, "omitted_bytes");
  const original = field(truncated, "original_bytes");
  if (typeof omitted === "number" && typeof original === "number") {
    return `${omitted.toLocaleString("en")} of ${original.toLocaleString("en")} bytes omitted from the middle`;
  }
  return undefined;
}

function CommandBody({ content }: { content: ToolCallPartContent }) {
  const command = asText(field(content.input, "command", "cmd", "argv"));
  const cwd = asText(field(content.input, "cwd", "workdir"));
  const exitCode = field(content.output, "exit_code", "exitCode");
  const duration = field(content.output, "wall_duration_ms", "duration_ms");
  const truncated = truncationNote(field(content.output, "truncated"));
  // The structured result's output when there is one: `content` may be the whole result as JSON.
  const output = asText(field(content.output, "output", "stdout") ?? content.content);
  return (
    <div className="tool-body">
      {command !== undefined && (
        <pre className="command">
          <span aria-hidden="true">$ </span>
          {command}
        </pre>
      )}
      <dl className="facts">
        {cwd !== undefined && (
          <>
            <dt>cwd</dt>
            <dd>{cwd}</dd>
          </>
        )}
        {exitCode !== undefined && (
          <>
            <dt>exit code</dt>
            <dd>{String(exitCode)}</dd>
          </>
        )}
        {typeof duration === "number" && (
          <>
            <dt>duration</dt>
            <dd>{formatDuration(duration)}</dd>
          </>
        )}
      </dl>
      {output !== undefined && <pre className="output">{output}</pre>}
      {truncated !== undefined && <p className="muted">{truncated}</p>}
    </div>
  );
}

/** A file read: which lines of how many, and the text itself (scrolling past 20 rem). */
function ReadBody({ content }: { content: ToolCallPartContent }) {
  const text = asText(field(content.output, "content") ?? content.content);
  const offset = field(content.output, "offset");
  const lines = field(content.output, "lines");
  const total = field(content.output, "total_lines");
  const range =
    typeof offset === "number" && typeof lines === "number" && typeof total === "number"
      ? `lines ${offset}–${offset + Math.max(lines - 1, 0)} of ${total}`
      : undefined;
  return (
    <div className="tool-body">
      {range !== undefined && <p className="muted">{range}</p>}
      {text !== undefined && <pre className="output">{text}</pre>}
    </div>
  );
}

/** A search: what was looked for, where, and the matches. */
function SearchBody({ content }: { content: ToolCallPartContent }) {
  const query = asText(field(content.input, "query", "pattern", "regex", "q"));
  const scope = asText(field(content.input, "path", "glob", "include"));
  const results = asText(field(content.output, "matches", "results") ?? content.content);
  return (
    <div className="tool-body">
      <dl className="facts">
        {query !== undefined && (
          <>
            <dt>query</dt>
            <dd>
              <code>{query}</code>
            </dd>
          </>
        )}
        {scope !== undefined && (
          <>
            <dt>in</dt>
            <dd>{scope}</dd>
          </>
        )}
      </dl>
      {results !== undefined && <pre className="output">{results}</pre>}
    </div>
  );
}

/**
 * A patch in the native agent's apply_patch format (`*** Update File:` sections with `+`/`-`
 * lines): not a unified diff, so drawn line by line with the same added/removed colours.
 */
function PatchLines({ patch }: { patch: string }) {
  return (
    <figure className="patch-figure" aria-label="Patch">
      <pre className="output patch">
        {patch.split("\n").map((line, index) => (
          // Lines of a fixed text: their index is their identity.
          // biome-ignore lint/suspicious/noArrayIndexKey: see above
          <span key={index} className={lineClass(line)}>
            {line}
            {"\n"}
          </span>
        ))}
      </pre>
    </figure>
  );
}

function lineClass(line: string): string {
  if (line.startsWith("***")) return "patch-header";
  if (line.startsWith("+")) return "patch-insert";
  if (line.startsWith("-")) return "patch-delete";
  return "patch-context";
}

function EditBody({ content }: { content: ToolCallPartContent }) {
  const diff = [content.content, field(content.output, "diff"), field(content.input, "diff")]
    .filter((value): value is string => typeof value === "string")
    .find(isUnifiedDiff);
  if (diff) return <DiffView diff={diff} />;
  const patch = field(content.input, "patch");
  if (typeof patch === "string" && patch.includes("*** Begin Patch")) {
    const output = asText(field(content.output, "summary") ?? content.content);
    return (
      <div className="tool-body">
        <PatchLines patch={patch} />
        {output !== undefined && <pre className="output">{output}</pre>}
      </div>
    );
  }
  return <GenericBody content={content} />;
}

function GenericBody({ content }: { content: ToolCallPartContent }) {
  const input = asText(content.input);
  const output = asText(content.content ?? content.output);
  return (
    <div className="tool-body">
      {input !== undefined && (
        <details>
          <summary>Input</summary>
          <pre className="output">{input}</pre>
        </details>
      )}
      {output !== undefined && <pre className="output">{output}</pre>}
    </div>
  );
}

/** What a collapsed card says after its title: a command's exit code and how long it ran. */
function SummaryFacts({ content }: { content: ToolCallPartContent }) {
  if (content.kind !== "execute") return null;
  const exitCode = field(content.output, "exit_code", "exitCode");
  const duration = field(content.output, "wall_duration_ms", "duration_ms");
  return (
    <>
      {exitCode !== undefined && (
        <span className="tool-fact" data-failed={String(exitCode) !== "0" || undefined}>
          exit {String(exitCode)}
        </span>
      )}
      {typeof duration === "number" && (
        <span className="tool-fact">{formatDuration(duration)}</span>
      )}
    </>
  );
}

/**
 * One tool call, one line until opened (as in an agent panel): its kind, title, a command's
 * exit code and time, and its status; the body, drawn for its kind, is there on demand.
 */
export function ToolCallCard({ content }: { content: ToolCallPartContent }) {
  const kind = content.kind ?? "other";
  const status = content.status ?? "pending";
  const title = content.title ?? "tool call";
  const locations = content.locations ?? [];
  return (
    <section className={`card tool-call status-${status}`} aria-label={`Tool call: ${title}`}>
      <details>
        <summary className="tool-summary">
          <span className="tool-kind">{kind}</span>
          <span className="tool-title">{title}</span>
          <SummaryFacts content={content} />
          <span className="badge" data-status={status}>
            {status.replace("_", " ")}
          </span>
        </summary>
        {locations.length > 0 && <p className="locations">{locations.join(", ")}</p>}
        {kind === "execute" ? (
          <CommandBody content={content} />
        ) : kind === "edit" ? (
          <EditBody content={content} />
        ) : kind === "read" ? (
          <ReadBody content={content} />
        ) : kind === "search" ? (
          <SearchBody content={content} />
        ) : (
          <GenericBody content={content} />
        )}
      </details>
    </section>
  );
}
