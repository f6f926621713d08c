import type { ProviderEntry, Session } from "@deckhand/wire";
import { type FormEvent, type KeyboardEvent, useId, useState } from "react";

/** What one message asks for besides its text: the turn's model and mode, when chosen. */
export interface TurnChoice {
  agent: string;
  model?: string;
  mode?: string;
}

export interface ComposerProps {
  /** The agents that can answer: enabled and ready. */
  providers: ProviderEntry[];
  session: Session | null;
  agent: string;
  onAgent: (agent: string) => void;
  /** Agents running a turn now, each with a Cancel button. */
  running: string[];
  /** Review comments waiting to go with the next message: Send works with them alone. */
  queuedComments: number;
  /** Sends; resolves true when the server took the message (the text is then cleared). */
  onSend: (text: string, choice: TurnChoice) => Promise<boolean>;
  onCancel: (agent: string) => void;
  /** Where Escape sends the focus: the message log, so keys scroll it. */
  onLeave: () => void;
}

function optionName(options: ProviderEntry["models"], id: string | null): string {
  return options.find((option) => option.id === id)?.name ?? id ?? "none";
}

/**
 * The message box under the chat, as in an agent panel: which agent answers, with which model
 * and mode (the session's own for its agent, else the agent's defaults, unless chosen here),
 * and the text. Enter sends, Shift+Enter breaks the line, Escape leaves the box.
 */
export function Composer(props: ComposerProps) {
  const { providers, session, agent, running, queuedComments } = props;
  const [text, setText] = useState("");
  const [model, setModel] = useState("");
  const [mode, setMode] = useState("");
  const [sending, setSending] = useState(false);
  const id = useId();
  const chosen = providers.find((provider) => provider.id === agent);
  // The session's own choice applies to its own agent; another agent starts at its defaults.
  const ownAgent = session?.agent === agent;
  const defaultModel = (ownAgent && session?.model) || chosen?.current_model || null;
  const defaultMode = (ownAgent && session?.mode) || chosen?.current_mode || null;
  const canSend = agent !== "" && !sending && (text.trim() !== "" || queuedComments > 0);

  const submit = async (event?: FormEvent) => {
    event?.preventDefault();
    if (!canSend) return;
    setSending(true);
    const sentText = text;
    const sent = await props.onSend(sentText, {
      agent,
      ...(model ? { model } : {}),
      ...(mode ? { mode } : {}),
    });
    setSending(false);
    // Only the sent text goes: what the person typed while it was on its way stays.
    if (sent) setText((current) => (current === sentText ? "" : current));
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void submit();
    } else if (event.key === "Escape") {
      event.preventDefault();
      props.onLeave();
    }
  };

  return (
    <form className="composer" aria-label="Composer" onSubmit={submit}>
      <label className="composer-text">
        <span className="visually-hidden">Message</span>
        <textarea
          value={text}
          rows={3}
          placeholder={
            chosen ? `Message ${chosen.label} (Enter sends, Shift+Enter breaks)` : "Message"
          }
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
          aria-describedby="composer-keys"
        />
      </label>
      <p id="composer-keys" className="visually-hidden">
        Enter sends, Shift+Enter starts a new line, Escape leaves the message box.
      </p>
      <div className="composer-bar">
        <span className="composer-choice">
          <label htmlFor={`${id}-agent`}>Agent</label>
          <select
            id={`${id}-agent`}
            value={agent}
            onChange={(event) => {
              props.onAgent(event.target.value);
              // Models and modes are the agent's own: another agent's choice means nothing to it.
              setModel("");
              setMode("");
            }}
          >
            {providers.map((provider) => (
              <option key={provider.id} value={provider.id}>
                {provider.id}
              </option>
            ))}
          </select>
        </span>
        {chosen && chosen.models.length > 0 && (
          <span className="composer-choice">
            <label htmlFor={`${id}-model`}>Model</label>
            <select
              id={`${id}-model`}
              value={model}
              onChange={(event) => setModel(event.target.value)}
            >
              <option value="">{optionName(chosen.models, defaultModel)}</option>
              {chosen.models
                .filter((option) => option.id !== defaultModel)
                .map((option) => (
                  <option key={option.id} value={option.id}>
                    {option.name}
                  </option>
                ))}
            </select>
          </span>
        )}
        {chosen && chosen.modes.length > 0 && (
          <span className="composer-choice">
            <label htmlFor={`${id}-mode`}>Mode</label>
            <select
              id={`${id}-mode`}
              value={mode}
              onChange={(event) => setMode(event.target.value)}
            >
              <option value="">{optionName(chosen.modes, defaultMode)}</option>
              {chosen.modes
                .filter((option) => option.id !== defaultMode)
                .map((option) => (
                  <option key={option.id} value={option.id}>
                    {option.name}
                  </option>
                ))}
            </select>
          </span>
        )}
        <div className="composer-actions">
          {running.map((turnAgent) => (
            <button
              key={turnAgent}
              type="button"
              className="danger"
              onClick={() => props.onCancel(turnAgent)}
            >
              Cancel {turnAgent}
            </button>
          ))}
          <button type="submit" className="primary" disabled={!canSend}>
            Send
          </button>
        </div>
      </div>
    </form>
  );
}
