// Kept apart from the route table, whose schemas it does not need: a client fills paths before
// its first answer, and building every schema of the API first would hold its first request up.

/** Fills a `ServerPath` template: `serverPath(ServerPath.session, {session_id})`. */
export function serverPath(template: string, parameters: Record<string, string> = {}): string {
  return template.replace(/:([a-z_]+)/g, (_, name: string) => {
    const value = parameters[name];
    if (value === undefined) throw new Error(`serverPath: missing parameter ${name}`);
    return encodeURIComponent(value);
  });
}
