// Opens a project on a repository and a session in it through a running server's API, as a
// client would: what the session benches publish and stream on.
import type { RunningServer } from "@deckhand/server-app";
import { ServerPath, serverPath } from "@deckhand/wire";

/** The new session's id. */
export async function openSession(server: RunningServer, repository: string): Promise<string> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${server.url}${path}`, {
      method: "POST",
      // A fresh connection: one kept alive through seconds of persisting can be closed by the
      // server just as it is reused.
      headers: { "content-type": "application/json", connection: "close" },
      body: JSON.stringify(body),
    });
    return (await response.json()) as { id: string };
  };
  const project = await post(ServerPath.projects, { repository_path: repository });
  const session = await post(
    serverPath(ServerPath.projectSessions, { project_id: project.id }),
    {},
  );
  return session.id;
}
