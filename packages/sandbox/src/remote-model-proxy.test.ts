import { WireHeader, WirePath } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import { remoteModelProxy, remoteModelProxyHosts } from "./remote-model-proxy.ts";

describe("remoteModelProxy", () => {
  it("serves a loopback server's proxy on its port, passing requests on with their body", async () => {
    const seen: { url: string; method: string; body: string; headers: Headers }[] = [];
    const endpoint = remoteModelProxy(
      "http://127.0.0.1:7420",
      WirePath.modelProvider,
      async (input, init) => {
        seen.push({
          url: String(input),
          method: init?.method ?? "GET",
          body: await new Response(init?.body).text(),
          headers: new Headers(init?.headers),
        });
        return new Response("answer", { status: 201 });
      },
    );
    expect(endpoint?.port()).toBe(7420);
    const answer = await endpoint!.fetch(
      new Request(`http://127.0.0.1:7420${WirePath.modelProvider}/codex/v1/responses?x=1`, {
        method: "POST",
        headers: { [WireHeader.authorization]: "Bearer dh-job-token", connection: "keep-alive" },
        body: '{"model":"m"}',
      }),
    );
    expect(answer.status).toBe(201);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      url: `http://127.0.0.1:7420${WirePath.modelProvider}/codex/v1/responses?x=1`,
      method: "POST",
      body: '{"model":"m"}',
    });
    expect(seen[0]!.headers.get(WireHeader.authorization)).toBe("Bearer dh-job-token");
    expect(seen[0]!.headers.get("connection")).toBeNull();
    expect(remoteModelProxyHosts("http://127.0.0.1:7420")).toEqual([]);
  });

  it("leaves a server elsewhere to the sandboxes' HTTP proxy, allowing its host and port", () => {
    expect(remoteModelProxy("https://deckhand.internal", WirePath.modelProvider)).toBeNull();
    expect(remoteModelProxyHosts("https://deckhand.internal")).toEqual(["deckhand.internal:443"]);
    expect(remoteModelProxyHosts("http://10.0.0.5:7420")).toEqual(["10.0.0.5:7420"]);
  });
});
