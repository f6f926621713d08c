import { useEffect, useState } from "react";
import { Route, Switch } from "wouter";
import { onUnauthorized, storedToken, storeToken } from "./api.ts";
import { NewSessionScreen } from "./screens/new-session-screen.tsx";
import { ProjectsScreen } from "./screens/projects-screen.tsx";
import { SessionScreen } from "./screens/session-screen.tsx";

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
  const [needsToken, setNeedsToken] = useState(false);
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
    <div key={generation} className="app">
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <header className="top-bar">
        <a href="/" className="brand">
          Deckhand
        </a>
      </header>
      <div id="content">
        <Switch>
          <Route path="/">{() => <ProjectsScreen />}</Route>
          <Route path="/projects/:projectId/new-session">
            {(params) => <NewSessionScreen projectId={params.projectId} />}
          </Route>
          <Route path="/sessions/:sessionId">
            {(params) => <SessionScreen key={params.sessionId} sessionId={params.sessionId} />}
          </Route>
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
