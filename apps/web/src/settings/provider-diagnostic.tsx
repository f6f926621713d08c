import { useState } from "react";
import { messageOf, server } from "../api.ts";
import { LoadState } from "../components/load-state.tsx";

/**
 * A provider's diagnostic (resolved command, version output, last probe error), fetched when
 * opened and again each time it is reopened, so it shows the provider as it is now.
 */
export function ProviderDiagnostic({ providerId, label }: { providerId: string; label: string }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = async () => {
    setError(null);
    try {
      setText(await server.getProviderDiagnostic({ params: { provider_id: providerId } }));
    } catch (failure) {
      setError(messageOf(failure));
    }
  };

  return (
    <details
      className="diagnostic"
      onToggle={(event) => {
        if (event.currentTarget.open) load();
      }}
    >
      <summary>
        Diagnostic<span className="visually-hidden"> of {label}</span>
      </summary>
      <LoadState error={error} loading={text === null} />
      {text !== null && <pre className="diagnostic-output">{text}</pre>}
    </details>
  );
}
