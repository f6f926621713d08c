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

function CommandBody({ content }: { content: Fields }) {
  const command = asText(field(content.input, "command", "cmd", "argv"));
  const cwd = asText(field(content.input, "cwd", "workdir"));
  const exitCode = field(content.output, "exit_code", "exitCode");
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
      </dl>
      {output !== undefined && <pre className="output">{output}</pre>}
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

function EditBody({ content }: { content: Fields }) {
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

function GenericBody({ content }: { content: Fields }) {
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

/** One tool call: its title, kind and status, and a body drawn for its kind. */
export function ToolCallCard({ content }: { content: Fields }) {
  const kind = typeof content.kind === "string" ? content.kind : "other";
  const status = typeof content.status === "string" ? content.status : "pending";
  const title = typeof content.title === "string" ? content.title : "tool call";
  const locations = Array.isArray(content.locations) ? (content.locations as string[]) : [];
  return (
    <section className={`card tool-call status-${status}`} aria-label={`Tool call: ${title}`}>
      <header className="card-header">
        <span className="tool-kind">{kind}</span>
        <strong className="tool-title">{title}</strong>
        <span className="badge" data-status={status}>
          {status.replace("_", " ")}
        </span>
      </header>
      {locations.length > 0 && <p className="locations">{locations.join(", ")}</p>}
      {kind === "execute" ? (
        <CommandBody content={content} />
      ) : kind === "edit" ? (
        <EditBody content={content} />
      ) : (
        <GenericBody content={content} />
      )}
    </section>
  );
}
