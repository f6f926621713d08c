import { describe, expect, it } from "vitest";
import { serverPaths, withoutServerPaths } from "./server-paths.ts";

describe("withoutServerPaths", () => {
  it("names the data directory and the working directory, longest first", () => {
    const paths = serverPaths("/srv/deckhand/data", "/srv/deckhand");
    expect(
      withoutServerPaths(
        "cannot read /srv/deckhand/data/projects/x, run from /srv/deckhand/bin",
        paths,
      ),
    ).toBe("cannot read <data-dir>/projects/x, run from <server-directory>/bin");
  });

  it("leaves every path alone when the server runs in /", () => {
    expect(withoutServerPaths("cannot read /etc/x", serverPaths("/", "/"))).toBe(
      "cannot read /etc/x",
    );
  });
});
