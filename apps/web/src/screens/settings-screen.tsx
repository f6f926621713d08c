import { useDocumentTitle } from "../components/document-title.ts";
import { useConnection } from "../connection.ts";
import { NotificationSettings } from "../sessions/notification-settings.tsx";
import { CodeHostConnectionsSection } from "../settings/code-host-connections-section.tsx";
import { ModelUpstreamsSection } from "../settings/model-upstreams-section.tsx";
import { ProvidersSection } from "../settings/providers-section.tsx";
import { UsageSection } from "../settings/usage-section.tsx";

/** The sections, in the order people look for them; each is a card with its heading's id. */
const SECTIONS = [
  { id: "providers-heading", label: "Providers" },
  { id: "upstreams-heading", label: "Model upstreams" },
  { id: "code-hosts-heading", label: "Code host connections" },
  { id: "usage-heading", label: "Usage" },
  { id: "notifications-heading", label: "Notifications" },
] as const;

/** Settings: one section each, with a navigation to jump between them. */
export function SettingsScreen() {
  // The read-only sections load again when the server comes back (the forms keep their input).
  const { reconnects } = useConnection();
  useDocumentTitle("Settings");
  return (
    <main className="settings-screen">
      <header className="screen-header">
        <h1>Settings</h1>
      </header>
      <nav className="section-nav" aria-label="Settings sections">
        <ul>
          {SECTIONS.map((section) => (
            <li key={section.id}>
              <a href={`#${section.id}`}>{section.label}</a>
            </li>
          ))}
        </ul>
      </nav>
      <ProvidersSection />
      <ModelUpstreamsSection key={`upstreams-${reconnects}`} />
      <CodeHostConnectionsSection key={`code-hosts-${reconnects}`} />
      <UsageSection />
      <NotificationSettings />
    </main>
  );
}
