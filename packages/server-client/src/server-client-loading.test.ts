import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// In a process of its own, which has loaded nothing yet: which modules the client loads, and
// when. A resolve hook records every module resolved.
const script = `
import { registerHooks } from "node:module";
const resolved = [];
registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    resolved.push(result.url);
    return result;
  },
});
const zodLoaded = () => resolved.some((url) => /\\/zod\\//.test(url));
const { createServerClient } = await import("@deckhand/server-client");
const seen = {};
const client = createServerClient({
  baseUrl: "http://127.0.0.1:9",
  fetch: async () => {
    seen.atSend = zodLoaded();
    return new Response(JSON.stringify({ status: "not a health answer" }), {
      headers: { "content-type": "application/json" },
    });
  },
});
seen.afterCreate = zodLoaded();
const error = await client.getHealth().catch((caught) => caught);
seen.code = error.code;
seen.afterAnswer = zodLoaded();
process.stdout.write(JSON.stringify(seen));
`;

describe("the server client's loading", () => {
  it("sends its first request before it loads the route table's schemas, and checks the answer with them", () => {
    const output = execFileSync(
      process.execPath,
      ["--conditions=source", "--input-type=module", "--eval", script],
      { cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8" },
    );
    expect(JSON.parse(output)).toEqual({
      afterCreate: false,
      atSend: false,
      code: "unexpected_answer",
      afterAnswer: true,
    });
  });
});
