// A workspace agent on loopback without a token runs whatever it is sent. A web page could send
// it a command (a no-cors text/plain POST) or re-point its own name at 127.0.0.1 and use it as
// its own (DNS rebinding); the Host and Origin guard and the JSON media type refuse both.
import { existsSync, realpathSync } from "node:fs";
import { join } from "node:path";
import {
  createTempRepository,
  rawRequest,
  type TempRepository,
  tryWebSocket,
} from "@deckhand/testkit";
import { WirePath } from "@deckhand/wire";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveAgentConfig } from "./config.ts";
import { type RunningAgent, startAgent } from "./start-agent.ts";

describe("a tokenless workspace agent on loopback, from a web page", () => {
  let agent: RunningAgent;
  let repository: TempRepository;
  let root: string;
  let host: string;

  beforeAll(async () => {
    // A repository, so the git watch has something to watch.
    repository = createTempRepository({ "README.md": "# watched\n" });
    root = realpathSync(repository.path);
    agent = await startAgent(resolveAgentConfig({ listen: "127.0.0.1:0", dir: root }), {
      logger: pino({ level: "silent" }),
    });
    host = new URL(agent.url).host;
  });

  afterAll(async () => {
    await agent?.close();
    repository?.remove();
  });

  const start = (headers: Record<string, string>, marker: string) =>
    rawRequest(`${agent.url}${WirePath.processes}/start`, {
      method: "POST",
      headers: { host, ...headers },
      body: JSON.stringify({ command: `touch ${marker}` }),
    });

  it("runs nothing a page on another origin posts, as a simple request or not", async () => {
    for (const origin of ["http://127.0.0.1:1", "https://attacker.example", "null"]) {
      for (const type of ["text/plain;charset=UTF-8", "application/json"]) {
        const response = await start({ origin, "content-type": type }, "from-a-page");
        expect(response.status, `${origin} ${type}`).toBe(403);
        expect(JSON.parse(response.body).error.code).toBe("origin_not_allowed");
      }
    }
    const crossSite = await start(
      { "sec-fetch-site": "cross-site", "content-type": "text/plain" },
      "from-a-page",
    );
    expect(crossSite.status).toBe(403);
    expect(agent.processes.list(null, { limit: 100 })).toEqual([]);
    expect(existsSync(join(root, "from-a-page"))).toBe(false);
  });

  it("refuses a rebound Host, and a JSON body that is not sent as JSON", async () => {
    const rebound = await start(
      {
        host: "attacker.example:7421",
        origin: "http://attacker.example:7421",
        "content-type": "application/json",
      },
      "rebound",
    );
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error).toMatchObject({
      code: "host_not_allowed",
      message: expect.stringContaining("--allowed-hosts"),
    });
    const list = await rawRequest(`${agent.url}${WirePath.processes}/list`, {
      headers: { host: "attacker.example:7421" },
    });
    expect(list.status).toBe(403);
    const untyped = await start({ "content-type": "text/plain" }, "untyped");
    expect(untyped.status).toBe(415);
    expect(JSON.parse(untyped.body).error.code).toBe("unsupported_media_type");
    expect(existsSync(join(root, "rebound"))).toBe(false);
    expect(existsSync(join(root, "untyped"))).toBe(false);
  });

  it("still runs what a program sends: no Origin, JSON", async () => {
    const response = await start({ "content-type": "application/json" }, "from-a-program");
    expect(response.status).toBe(200);
    await agent.processes.waitForExit(JSON.parse(response.body).id, null);
    expect(existsSync(join(root, "from-a-program"))).toBe(true);
    expect(response.headers["x-content-type-options"]).toBe("nosniff");
    expect(response.headers["content-security-policy"]).toBe(
      "default-src 'none'; frame-ancestors 'none'",
    );
  });

  it("opens no git watch to another origin or a rebound Host, and one to a program", async () => {
    const watch = `${agent.url}${WirePath.gitWatch}`;
    for (const headers of [
      { Origin: "https://attacker.example" } as Record<string, string>,
      { Origin: "null" },
      { Host: "attacker.example:7421", Origin: "http://attacker.example:7421" },
    ]) {
      const outcome = await tryWebSocket(watch, { headers });
      expect(outcome.opened, JSON.stringify(headers)).toBe(false);
      if (!outcome.opened) expect(outcome.status).toBe(403);
    }
    const own = await tryWebSocket(watch, { frameTimeoutMs: 10_000 });
    expect(own.opened).toBe(true);
  });
});
