import { lazy, Suspense, useEffect, useState } from "react";
import { Link, Route, Switch, useLocation } from "wouter";
import { onUnauthorized, storedToken, storeToken } from "./api.ts";
import { ROUTE_MARK } from "./components/content-mark.ts";
import { retryNow, useConnection } from "./connection.ts";
import { BatchRunScreen } from "./screens/batch-run-screen.tsx";
import { BatchesScreen } from "./screens/batches-screen.tsx";
import { NewBatchScreen } from "./screens/new-batch-screen.tsx";
import { NewSessionScreen } from "./screens/new-session-screen.tsx";
import { ProjectsScreen } from "./screens/projects-screen.tsx";
import { PromptSessionScreen } from "./screens/prompt-session-screen.tsx";
import { SessionScreen } from "./screens/session-screen.tsx";
import { SessionsScreen } from "./screens/sessions-screen.tsx";
import { SettingsScreen } from "./screens/settings-screen.tsx";
import {
  SessionActivityWatcher,
  useSessionActivity,
} from "./sessions/session-activity-watcher.tsx";

// Loaded on its screen only: the first visit's JavaScript stays in budget.
const BatchChangeScreen = lazy(() =>
  import("./batches/batch-change-screen.tsx").then((module) => ({
    default: module.BatchChangeScreen,
  })),
);

const SECTIONS = [
  {
    href: "/",
    label: "Projects",
    matches: (path: string) => path === "/" || /^\/projects\//.test(path),
  },
  {
    href: "/sessions",
    label: "Sessions",
    matches: (path: string) => /^\/sessions(\/|$)/.test(path),
  },
  {
    href: "/batches",
    label: "Batch changes",
    matches: (path: string) => path.startsWith("/batches"),
  },
  { href: "/settings", label: "Settings", matches: (path: string) => path.startsWith("/settings") },
] as const;

/** How many sessions have news since they were last opened, beside the Sessions link. */
function UnreadCount() {
  const { unreadCount } = useSessionActivity();
  if (unreadCount === 0) return null;
  return <span className="badge nav-unread" data-status="unread">{`${unreadCount} unread`}</span>;
}

/**
 * The one place that says the server is away: a banner under the top bar while it cannot be
 * reached (or is shutting down), gone as soon as it is back, when every screen loads again.
 */
function ConnectionBanner() {
  const { reachable, reason } = useConnection();
  return (
    <div role="status" className="connection-banner" data-reachable={reachable}>
      {!reachable && (
        <>
          <strong>Server unreachable: reconnecting…</strong> <span className="muted">{reason}</span>{" "}
          <button type="button" className="link-button" onClick={retryNow}>
            Retry now
          </button>
        </>
      )}
    </div>
  );
}

/** The top bar's sections; the current one is marked for assistive technology too. */
function MainNav() {
  const [location] = useLocation();
  return (
    <nav aria-label="Main" className="main-nav">
      <ul>
        {SECTIONS.map((section) => (
          <li key={section.href}>
            <Link href={section.href} aria-current={section.matches(location) ? "page" : undefined}>
              {section.label}
              {section.href === "/sessions" && <UnreadCount />}
            </Link>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/**
 * Asked for when the server answers 401 (it listens beyond loopback): the admin or an API
 * token, kept in this tab's sessionStorage and sent as a bearer token from then on.
 */
function TokenPrompt({ onSaved }: { onSaved: () => void }) {
  const [token, setToken] = useState("");
  return (
    <main>
      <form
        className="card stacked-form"
        aria-label="Sign in"
        onSubmit={(event) => {
          event.preventDefault();
          storeToken(token.trim());
          onSaved();
        }}
      >
        <h1>Token required</h1>
        <p>
          This server needs a token. Paste the admin token `deckhand up` printed (or an API token).
          It is kept for this tab only.
        </p>
        {storedToken() && (
          <p className="error" role="alert">
            The server refused the token you gave.
          </p>
        )}
        <label>
          Token
          <input
            type="password"
            autoComplete="off"
            value={token}
            onChange={(event) => setToken(event.target.value)}
            required
          />
        </label>
        <button type="submit" className="primary" disabled={!token.trim()}>
          Continue
        </button>
      </form>
    </main>
  );
}

export function App() {
  const [location] = useLocation();
  const [needsToken, setNeedsToken] = useState(false);
  // Where each navigation starts, for the route-to-first-content budget.
  useEffect(() => {
    performance.mark(ROUTE_MARK, { detail: location });
  }, [location]);
  // Remounts the screens once a token is given, so they load again with it.
  const [generation, setGeneration] = useState(0);
  useEffect(() => onUnauthorized(() => setNeedsToken(true)), []);
  if (needsToken)
    return (
      <TokenPrompt
        onSaved={() => {
          setNeedsToken(false);
          setGeneration((value) => value + 1);
        }}
      />
    );
  return (
    // A session fills the window (its panes scroll on their own); other screens scroll the page.
    <div
      key={generation}
      className={/^\/sessions\/(?!new$)[^/]+/.test(location) ? "app app-fill" : "app"}
    >
      <SessionActivityWatcher />
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <header className="top-bar">
        <a href="/" className="brand">
          Deckhand
        </a>
        <MainNav />
      </header>
      <ConnectionBanner />
      <div id="content">
        <Switch>
          <Route path="/">{() => <ProjectsScreen />}</Route>
          <Route path="/projects/:projectId/new-session">
            {(params) => <NewSessionScreen projectId={params.projectId} />}
          </Route>
          <Route path="/sessions">{() => <SessionsScreen />}</Route>
          <Route path="/sessions/new">{() => <PromptSessionScreen />}</Route>
          <Route path="/sessions/:sessionId">
            {(params) => <SessionScreen key={params.sessionId} sessionId={params.sessionId} />}
          </Route>
          <Route path="/batches">{() => <BatchesScreen />}</Route>
          <Route path="/batches/new">{() => <NewBatchScreen />}</Route>
          <Route path="/batches/runs/:runId">
            {(params) => <BatchRunScreen key={params.runId} runId={params.runId} />}
          </Route>
          <Route path="/batches/changes/:name">
            {(params) => (
              <Suspense fallback={<p className="muted">Loading…</p>}>
                <BatchChangeScreen key={params.name} name={decodeURIComponent(params.name)} />
              </Suspense>
            )}
          </Route>
          <Route path="/settings">{() => <SettingsScreen />}</Route>
          <Route>
            <main>
              <h1>Not found</h1>
              <p>
                <a href="/">Back to projects</a>
              </p>
            </main>
          </Route>
        </Switch>
      </div>
    </div>
  );
}
