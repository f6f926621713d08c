import { useConnection } from "../connection.ts";
import { NotificationSettings } from "../sessions/notification-settings.tsx";
import { CodeHostConnectionsSection } from "../settings/code-host-connections-section.tsx";
import { ModelUpstreamsSection } from "../settings/model-upstreams-section.tsx";
import { ProvidersSection } from "../settings/providers-section.tsx";
import { UsageSection } from "../settings/usage-section.tsx";

/** Settings: one section each, in the order people look for them. */
export function SettingsScreen() {
  // The read-only sections load again when the server comes back (the forms keep their input).
  const { reconnects } = useConnection();
  return (
    <main>
      <header className="screen-header">
        <h1>Settings</h1>
      </header>
      <ProvidersSection />
      <ModelUpstreamsSection key={`upstreams-${reconnects}`} />
      <CodeHostConnectionsSection key={`code-hosts-${reconnects}`} />
      <UsageSection />
      <NotificationSettings />
    </main>
  );
}
