import {
  type ProviderConfigEntry,
  ProviderConfigEntrySchema,
  ProviderIdSchema,
  type ProvidersConfigResponse,
} from "@deckhand/wire";
import { useId, useState } from "react";
import { changedMeanwhile, patchFailureMessage, patchProvidersConfig } from "./providers-config.ts";

interface EnvironmentRow {
  key: number;
  name: string;
  value: string;
}

const ENVIRONMENT_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface AddAcpAgentFormProps {
  /** The providers.json version the page shows; the patch is refused if the file moved on. */
  etag: string | null;
  /** Provider ids already taken: a merge patch would silently change that provider instead. */
  takenIds: readonly string[];
  onAdded: (config: ProvidersConfigResponse, id: string) => Promise<void>;
  /** The file changed meanwhile: the page reloads it. */
  onConflict: () => Promise<void>;
}

/** Reads the form into a providers.json entry, or says what is wrong with it. */
function entryFrom(
  id: string,
  label: string,
  command: string,
  argumentsText: string,
  environment: EnvironmentRow[],
  takenIds: readonly string[],
): { entry: ProviderConfigEntry } | { problem: string } {
  const idCheck = ProviderIdSchema.safeParse(id);
  if (!idCheck.success)
    return { problem: `Id ${idCheck.error.issues[0]?.message ?? "is invalid"}.` };
  if (takenIds.includes(id)) {
    return { problem: `A provider called "${id}" exists already; choose another id.` };
  }
  if (command.trim() === "") return { problem: "Give the command that starts the agent." };
  // One argument per line, so arguments with spaces need no quoting.
  const args = argumentsText.split("\n").filter((line) => line.trim() !== "");
  const env: Record<string, string> = {};
  for (const row of environment) {
    if (row.name === "" && row.value === "") continue;
    if (!ENVIRONMENT_NAME.test(row.name)) {
      return { problem: `"${row.name}" is not an environment variable name.` };
    }
    env[row.name] = row.value;
  }
  const parsed = ProviderConfigEntrySchema.safeParse({
    extends: "acp",
    ...(label.trim() ? { label: label.trim() } : {}),
    command: [command.trim(), ...args],
    ...(Object.keys(env).length > 0 ? { env } : {}),
    enabled: true,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { problem: `${issue?.path.join(".") ?? "entry"}: ${issue?.message ?? "invalid"}` };
  }
  return { entry: parsed.data };
}

/** Adds a custom ACP agent to providers.json (`"extends": "acp"`) with a merge patch. */
export function AddAcpAgentForm({ etag, takenIds, onAdded, onConflict }: AddAcpAgentFormProps) {
  const formId = useId();
  const [id, setId] = useState("");
  const [label, setLabel] = useState("");
  const [command, setCommand] = useState("");
  const [argumentsText, setArgumentsText] = useState("");
  const [environment, setEnvironment] = useState<EnvironmentRow[]>([]);
  const [nextKey, setNextKey] = useState(0);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [added, setAdded] = useState<string | null>(null);

  /** Any edit makes the last answer (a refusal, or "added") old news: it goes. */
  const edited =
    <Value,>(set: (value: Value) => void) =>
    (value: Value) => {
      setError(null);
      setAdded(null);
      set(value);
    };
  const setRow = (key: number, change: Partial<EnvironmentRow>) =>
    edited(setEnvironment)((rows: EnvironmentRow[]) =>
      rows.map((row) => (row.key === key ? { ...row, ...change } : row)),
    );

  const submit = async (event: React.FormEvent) => {
    event.preventDefault();
    setError(null);
    setAdded(null);
    const trimmedId = id.trim();
    const result = entryFrom(trimmedId, label, command, argumentsText, environment, takenIds);
    if ("problem" in result) {
      setError(result.problem);
      return;
    }
    setBusy(true);
    try {
      const config = await patchProvidersConfig({ providers: { [trimmedId]: result.entry } }, etag);
      setId("");
      setLabel("");
      setCommand("");
      setArgumentsText("");
      setEnvironment([]);
      await onAdded(config, trimmedId);
      setAdded(`${trimmedId} is added to providers.json.`);
    } catch (failure) {
      setError(patchFailureMessage(failure));
      if (changedMeanwhile(failure)) await onConflict().catch(() => undefined);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="stacked-form" onSubmit={submit} aria-labelledby={`${formId}-heading`}>
      <h3 id={`${formId}-heading`}>Add an ACP agent</h3>
      <p className="muted">
        Any command that speaks the Agent Client Protocol over stdio. It is saved to providers.json.
      </p>
      <label>
        Id
        <input
          value={id}
          onChange={(event) => edited(setId)(event.target.value)}
          placeholder="my-agent"
          autoCapitalize="off"
          spellCheck={false}
          required
        />
      </label>
      <label>
        Label (optional)
        <input value={label} onChange={(event) => edited(setLabel)(event.target.value)} />
      </label>
      <label>
        Command
        <input
          value={command}
          onChange={(event) => edited(setCommand)(event.target.value)}
          placeholder="my-agent"
          spellCheck={false}
          required
        />
      </label>
      <label>
        Arguments, one per line
        <textarea
          value={argumentsText}
          onChange={(event) => edited(setArgumentsText)(event.target.value)}
          rows={2}
          spellCheck={false}
        />
      </label>
      <fieldset>
        <legend>Environment</legend>
        {environment.length === 0 && <p className="muted">No extra variables.</p>}
        {environment.map((row, index) => (
          <div className="environment-row" key={row.key}>
            <label>
              Name<span className="visually-hidden"> of variable {index + 1}</span>
              <input
                value={row.name}
                onChange={(event) => setRow(row.key, { name: event.target.value })}
                spellCheck={false}
              />
            </label>
            <label>
              Value<span className="visually-hidden"> of variable {index + 1}</span>
              <input
                value={row.value}
                onChange={(event) => setRow(row.key, { value: event.target.value })}
                spellCheck={false}
              />
            </label>
            <button
              type="button"
              onClick={() =>
                setEnvironment((rows) => rows.filter((other) => other.key !== row.key))
              }
            >
              Remove<span className="visually-hidden"> variable {index + 1}</span>
            </button>
          </div>
        ))}
        <button
          type="button"
          onClick={() => {
            setEnvironment((rows) => [...rows, { key: nextKey, name: "", value: "" }]);
            setNextKey((key) => key + 1);
          }}
        >
          Add variable
        </button>
      </fieldset>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <p className="notice" role="status">
        {added}
      </p>
      <div className="actions">
        <button type="submit" disabled={busy}>
          Add agent
        </button>
      </div>
    </form>
  );
}
