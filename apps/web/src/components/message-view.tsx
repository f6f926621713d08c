import { memo } from "react";
import type { ViewMessage, ViewPart } from "../session/session-model.ts";
import { StreamingMarkdown } from "./streaming-markdown.tsx";
import { ToolCallCard } from "./tool-call-card.tsx";

type PlanEntry = Extract<ViewPart, { kind: "plan" }>["content"]["entries"][number];

export function PlanView({ entries }: { entries: PlanEntry[] }) {
  return (
    <section className="card plan" aria-label="Plan">
      <header className="card-header">
        <strong>Plan</strong>
      </header>
      <ol>
        {entries.map((entry) => (
          <li key={entry.content} data-status={entry.status}>
            <span className="badge" data-status={entry.status}>
              {entry.status.replace("_", " ")}
            </span>{" "}
            {entry.content}
          </li>
        ))}
      </ol>
    </section>
  );
}

const PartView = memo(function PartView({ part }: { part: ViewPart }) {
  switch (part.kind) {
    case "text":
      return <StreamingMarkdown text={part.content.text} />;
    case "reasoning":
      return (
        <details className="reasoning">
          <summary>Reasoning</summary>
          <StreamingMarkdown text={part.content.text} />
        </details>
      );
    case "tool_call":
      return <ToolCallCard content={part.content} />;
    case "plan":
      return <PlanView entries={part.content.entries} />;
    case "error":
      return (
        <p className="error" role="alert">
          {part.content.message || "the agent reported an error"}
        </p>
      );
    default:
      return <pre className="output">{JSON.stringify(part.content, null, 2)}</pre>;
  }
});

/**
 * What the person wrote, as they wrote it: their text is not markdown to them (`__init__` is a
 * name, a newline a newline), so it is shown verbatim with its line breaks.
 */
function UserText({ parts }: { parts: ViewPart[] }) {
  const text = parts
    .flatMap((part) => (part.kind === "text" ? [part.content.text] : []))
    .join("\n\n");
  return <p className="user-text">{text}</p>;
}

/** Memoised: the chat re-renders once per frame while a message streams, and only it changed. */
export const MessageView = memo(function MessageView({ message }: { message: ViewMessage }) {
  if (message.role === "system") {
    // What Deckhand told the session (a taken-over batch workspace's steps, diff and failure).
    return (
      <article
        className="message message-system"
        data-message-id={message.id}
        aria-label="Context from Deckhand"
      >
        <header className="message-header">
          <span>Deckhand · context</span>
        </header>
        {message.parts.map((part, index) =>
          part.kind === "text" ? (
            // biome-ignore lint/suspicious/noArrayIndexKey: a stored message's parts never move
            <StreamingMarkdown key={index} text={part.content.text} />
          ) : null,
        )}
      </article>
    );
  }
  return (
    <article
      className={`message message-${message.role}`}
      data-message-id={message.id}
      data-status={message.status}
      aria-label={message.role === "user" ? "Your message" : `${message.agent ?? "agent"} answer`}
    >
      <header className="message-header">
        <span>{message.role === "user" ? `You → ${message.agent ?? ""}` : message.agent}</span>
        {message.status !== "complete" && (
          <span className="badge" data-status={message.status}>
            {message.status}
          </span>
        )}
      </header>
      {message.role === "user" ? (
        <UserText parts={message.parts} />
      ) : (
        message.parts.map((part, index) => (
          // Parts keep their position for the life of a message.
          // biome-ignore lint/suspicious/noArrayIndexKey: see above
          <PartView key={index} part={part} />
        ))
      )}
      {message.error && !message.parts.some((part) => part.kind === "error") && (
        <p className="error" role="alert">
          {message.error}
        </p>
      )}
    </article>
  );
});
