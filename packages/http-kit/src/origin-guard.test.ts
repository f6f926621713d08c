import { createServer, request as httpRequest, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { ErrorResponse } from "@deckhand/wire";
import fc from "fast-check";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { installErrorHandling } from "./error-handling.ts";
import {
  admitUpgrade,
  type GuardedRequest,
  guardOrigin,
  isLoopbackHost,
  normalizeHostPattern,
  normalizeOrigin,
  OriginPolicy,
  type OriginPolicyOptions,
  parseHostHeader,
} from "./origin-guard.ts";

const ADVICE = {
  hostAdvice: "add it to allowedHosts",
  originAdvice: "add it to allowedOrigins",
};

function policy(options: Partial<OriginPolicyOptions> = {}): OriginPolicy {
  return new OriginPolicy({ listenHost: "127.0.0.1", ...ADVICE, ...options });
}

/** A request a non-browser client sends: a Host, nothing about where it comes from. */
function plain(host: string, method = "GET"): GuardedRequest {
  return { method, host, origin: undefined, fetchSite: undefined };
}

function fromBrowser(host: string, origin: string, method = "POST"): GuardedRequest {
  return { method, host, origin, fetchSite: undefined };
}

/** Host names that are not loopback names: random domains, localhost look-alikes left out. */
const foreignDomain = fc
  .domain()
  .filter((name) => name.toLowerCase() !== "localhost" && !/^[\d.]+$/.test(name));
const port = fc.integer({ min: 1, max: 65_535 });
const octet = fc.integer({ min: 0, max: 255 });

describe("parseHostHeader", () => {
  it("splits names, addresses and IPv6 in brackets, canonical and with the port if given", () => {
    expect(parseHostHeader("127.0.0.1:7420")).toEqual({ hostname: "127.0.0.1", port: 7420 });
    expect(parseHostHeader("[::1]:7420")).toEqual({ hostname: "::1", port: 7420 });
    expect(parseHostHeader("[::FFFF:127.0.0.1]")).toEqual({
      hostname: "::ffff:7f00:1",
      port: null,
    });
    expect(parseHostHeader("LocalHost.")).toEqual({ hostname: "localhost", port: null });
    // Browsers normalise numeric forms before they send them; curl sends them as typed.
    expect(parseHostHeader("127.1:80")).toEqual({ hostname: "127.0.0.1", port: 80 });
    expect(parseHostHeader("0x7f.0.0.1")).toEqual({ hostname: "127.0.0.1", port: null });
  });

  it("refuses what is not a host: userinfo, paths, spaces, open brackets, bad ports and addresses", () => {
    for (const value of [
      "",
      ".",
      "attacker.example@127.0.0.1",
      "127.0.0.1/x",
      "127.0.0.1 x",
      "[::1",
      "::1",
      "localhost:",
      "localhost:99999",
      "999.1.1.1",
      "127.0.0.1:7420, attacker.example",
    ]) {
      expect(parseHostHeader(value), value).toBeNull();
    }
  });
});

describe("isLoopbackHost", () => {
  it("knows localhost, 127.0.0.0/8 and ::1, with or without brackets, in any case", () => {
    for (const host of ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"]) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "127.999.1.1", "localhost.example", ""]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe("the Host check", () => {
  it("answers loopback names and addresses by default, with or without a port, in any case", () => {
    const loopback = policy();
    for (const host of [
      "127.0.0.1:7420",
      "127.0.0.1",
      "127.8.9.10:7420",
      "localhost:7420",
      "LOCALHOST",
      "localhost.:7420",
      "[::1]:7420",
      "[::ffff:127.0.0.1]:7420",
    ]) {
      expect(loopback.refusal(plain(host)), host).toBeNull();
    }
  });

  it("refuses the observed rebinding Host, and what only looks like loopback", () => {
    const loopback = policy();
    for (const host of [
      "attacker.example:7420",
      "localhost.attacker.example",
      "127.0.0.1.attacker.example",
      "10.0.0.5:7420",
      "0.0.0.0:7420",
      "[::]:7420",
      "attacker.example@127.0.0.1",
    ]) {
      const refusal = loopback.refusal(plain(host));
      expect(refusal?.code, host).toBe("host_not_allowed");
      expect(refusal?.message).toContain("add it to allowedHosts");
    }
    expect(loopback.refusal(plain("attacker.example:7420"))?.message).toBe(
      `Host "attacker.example:7420" is not one of this server's names; if you reach the server by that name, add it to allowedHosts`,
    );
  });

  it("refuses every random name a loopback server was not given", () => {
    fc.assert(
      fc.property(foreignDomain, fc.option(port), (name, maybePort) => {
        const host = maybePort === null ? name : `${name}:${maybePort}`;
        expect(policy().refusal(plain(host))?.code).toBe("host_not_allowed");
      }),
    );
  });

  it("answers a random name exactly when it, or a domain above it with a leading dot, is allowed", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(foreignDomain, { minLength: 1, maxLength: 4 }),
        foreignDomain,
        port,
        fc.boolean(),
        (allowed, candidate, candidatePort, upperCase) => {
          const server = policy({ allowedHosts: allowed });
          const sent = `${upperCase ? candidate.toUpperCase() : candidate}:${candidatePort}`;
          const expected = allowed.some((name) => name.toLowerCase() === candidate.toLowerCase());
          expect(server.refusal(plain(sent)) === null).toBe(expected);
          // Every allowed name is answered, on any port, with a trailing dot too.
          for (const name of allowed)
            expect(server.refusal(plain(`${name}.:${candidatePort}`))).toBeNull();
          // A subdomain of an allowed name is not, unless the entry starts with a dot.
          const sub = `rebind.${allowed[0]}`;
          expect(server.refusal(plain(sub))?.code).toBe("host_not_allowed");
          expect(policy({ allowedHosts: [`.${allowed[0]}`] }).refusal(plain(sub))).toBeNull();
        },
      ),
    );
  });

  it("answers only 127.0.0.0/8 among IPv4 addresses on loopback, and every address beyond it", () => {
    fc.assert(
      fc.property(octet, octet, octet, octet, (a, b, c, d) => {
        const host = `${a}.${b}.${c}.${d}:7420`;
        expect(policy().refusal(plain(host)) === null).toBe(a === 127);
        // An address cannot be rebound, so a server other machines reach answers them all.
        expect(policy({ listenHost: "0.0.0.0" }).refusal(plain(host))).toBeNull();
      }),
    );
  });

  it("beyond loopback answers its listen name and public URL's host, still no other name", () => {
    const named = policy({ listenHost: "deckhand.lan" });
    expect(named.refusal(plain("Deckhand.LAN:7420"))).toBeNull();
    expect(named.refusal(plain("[2001:db8::1]:7420"))).toBeNull();
    expect(named.refusal(plain("attacker.example:7420"))?.code).toBe("host_not_allowed");
    const proxied = policy({ publicUrl: "https://deckhand.example.com/" });
    expect(proxied.refusal(plain("deckhand.example.com"))).toBeNull();
    expect(proxied.refusal(plain("other.example.com"))?.code).toBe("host_not_allowed");
    const wildcard = policy({ listenHost: "::" });
    expect(wildcard.refusal(plain("attacker.example"))?.code).toBe("host_not_allowed");
    expect(wildcard.refusal(plain("localhost:7420"))).toBeNull();
  });

  it("lets a request without Host through: no browser sends one", () => {
    expect(
      policy().refusal({
        method: "POST",
        host: undefined,
        origin: undefined,
        fetchSite: undefined,
      }),
    ).toBeNull();
  });
});

describe("the Origin check", () => {
  it("lets a request without Origin or Sec-Fetch-Site through, as curl, the CLI and agents send", () => {
    for (const method of ["GET", "POST", "PATCH", "DELETE", "PUT"]) {
      expect(policy().refusal(plain("127.0.0.1:7420", method))).toBeNull();
    }
  });

  it("answers the UI's own origin: the Origin names the Host the request went to", () => {
    const loopback = policy();
    expect(loopback.refusal(fromBrowser("127.0.0.1:7420", "http://127.0.0.1:7420"))).toBeNull();
    expect(loopback.refusal(fromBrowser("[::1]:7420", "http://[::1]:7420"))).toBeNull();
    expect(loopback.refusal(fromBrowser("localhost:7420", "http://LOCALHOST:7420"))).toBeNull();
    // A default port is named by neither side.
    expect(loopback.refusal(fromBrowser("localhost", "http://localhost"))).toBeNull();
    expect(loopback.refusal(fromBrowser("localhost:80", "http://localhost"))).toBeNull();
    // Behind a TLS proxy that keeps Host, the origin is https on 443.
    const proxied = policy({ allowedHosts: ["deckhand.example.com"] });
    expect(
      proxied.refusal(fromBrowser("deckhand.example.com", "https://deckhand.example.com")),
    ).toBeNull();
  });

  it("refuses another port of the same host, the observed attack page's origin", () => {
    const refusal = policy().refusal(fromBrowser("127.0.0.1:7420", "http://127.0.0.1:5173"));
    expect(refusal?.code).toBe("origin_not_allowed");
    expect(refusal?.message).toBe(
      'a browser request from "http://127.0.0.1:5173" cannot act on this server: only its own pages can; if that site is yours, add it to allowedOrigins',
    );
    expect(policy().refusal(fromBrowser("localhost", "http://localhost:8080"))?.code).toBe(
      "origin_not_allowed",
    );
  });

  it("refuses Origin null and origins that are not origins, reads included", () => {
    for (const method of ["GET", "POST"]) {
      const refusal = policy().refusal(fromBrowser("127.0.0.1:7420", "null", method));
      expect(refusal?.code).toBe("origin_not_allowed");
      expect(refusal?.message).toContain("Origin null");
    }
    for (const origin of [
      "http://127.0.0.1:7420/path",
      "http://user@127.0.0.1:7420",
      "http://127.0.0.1:7420, http://127.0.0.1:7420",
      "127.0.0.1:7420",
      "",
    ]) {
      expect(policy().refusal(fromBrowser("127.0.0.1:7420", origin))?.code, origin).toBe(
        "origin_not_allowed",
      );
    }
  });

  it("refuses every random foreign origin, and answers exactly the configured ones", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("http", "https"),
        fc.oneof(foreignDomain, fc.constant("127.0.0.1"), fc.constant("localhost")),
        port,
        fc.constantFrom("GET", "POST", "PATCH", "DELETE"),
        (scheme, host, originPort, method) => {
          const origin = `${scheme}://${host}:${originPort}`;
          const sameOrigin = scheme === "http" && host === "127.0.0.1" && originPort === 7420;
          expect(policy().refusal(fromBrowser("127.0.0.1:7420", origin, method)) === null).toBe(
            sameOrigin,
          );
          expect(
            policy({ allowedOrigins: [origin] }).refusal(
              fromBrowser("127.0.0.1:7420", origin.toUpperCase(), method),
            ),
          ).toBeNull();
        },
      ),
    );
  });

  it("answers the public URL's origin whatever Host a proxy sends on, and not its http twin", () => {
    const proxied = policy({ publicUrl: "https://deckhand.example.com" });
    expect(
      proxied.refusal(fromBrowser("127.0.0.1:7420", "https://deckhand.example.com")),
    ).toBeNull();
    expect(
      proxied.refusal(fromBrowser("127.0.0.1:7420", "http://deckhand.example.com"))?.code,
    ).toBe("origin_not_allowed");
  });

  it("refuses a cross-site or same-site Sec-Fetch-Site without Origin when the request acts, not when it reads", () => {
    for (const fetchSite of ["cross-site", "same-site", "Cross-Site"]) {
      const acting = { method: "POST", host: "127.0.0.1:7420", origin: undefined, fetchSite };
      expect(policy().refusal(acting)?.code).toBe("origin_not_allowed");
      expect(policy().refusal({ ...acting, method: "GET" })).toBeNull();
    }
    for (const fetchSite of ["same-origin", "none"]) {
      expect(
        policy().refusal({
          method: "DELETE",
          host: "127.0.0.1:7420",
          origin: undefined,
          fetchSite,
        }),
      ).toBeNull();
    }
  });
});

describe("configuration entries", () => {
  it("normalises allowed hosts and refuses what is not one", () => {
    expect(normalizeHostPattern("Deckhand.Example.COM.")).toBe("deckhand.example.com");
    expect(normalizeHostPattern(".Example.com")).toBe(".example.com");
    expect(normalizeHostPattern("10.0.0.5")).toBe("10.0.0.5");
    expect(normalizeHostPattern("::1")).toBe("::1");
    expect(normalizeHostPattern("[::1]")).toBe("::1");
    for (const entry of ["", ".", "a/b", "http://x", "x:80", ".10.0.0.5", "a b", "*.example.com"]) {
      expect(normalizeHostPattern(entry), entry).toBeNull();
    }
  });

  it("normalises allowed origins and refuses what is not an http(s) origin", () => {
    expect(normalizeOrigin("HTTPS://Tools.Example.com/")).toBe("https://tools.example.com");
    expect(normalizeOrigin("https://tools.example.com:443")).toBe("https://tools.example.com");
    expect(normalizeOrigin("http://[::1]:8080")).toBe("http://[::1]:8080");
    for (const entry of ["null", "tools.example.com", "ftp://x", "https://x/path", "https://a@x"]) {
      expect(normalizeOrigin(entry), entry).toBeNull();
    }
  });

  it("refuses to build a policy from an entry that is not a host or origin", () => {
    expect(() => policy({ allowedHosts: ["a/b"] })).toThrow('"a/b" is not a host name or address');
    expect(() => policy({ allowedOrigins: ["null"] })).toThrow('"null" is not an http(s) origin');
  });
});

describe("guardOrigin", () => {
  function guarded() {
    const app = new Hono();
    installErrorHandling(app);
    app.use(guardOrigin(policy()));
    let acted = 0;
    app.post("/act", (context) => {
      acted++;
      return context.json({ acted });
    });
    app.get("/read", (context) => context.json({ ok: true }));
    return { app, acted: () => acted };
  }

  it("answers 403 with the refusal's code and message before the route runs", async () => {
    const { app, acted } = guarded();
    const rebound = await app.request("http://attacker.example:7420/read");
    expect(rebound.status).toBe(403);
    expect(((await rebound.json()) as ErrorResponse).error.code).toBe("host_not_allowed");
    const foreign = await app.request("http://127.0.0.1:7420/act", {
      method: "POST",
      headers: { origin: "http://127.0.0.1:5555", "content-type": "text/plain" },
      body: "{}",
    });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as ErrorResponse).error.code).toBe("origin_not_allowed");
    expect(acted()).toBe(0);
    const own = await app.request("http://127.0.0.1:7420/act", {
      method: "POST",
      headers: { origin: "http://127.0.0.1:7420" },
    });
    expect(own.status).toBe(200);
    const curl = await app.request("http://127.0.0.1:7420/act", { method: "POST" });
    expect(curl.status).toBe(200);
    expect(acted()).toBe(2);
  });
});

describe("admitUpgrade", () => {
  /** Sends an upgrade request with `headers` to a server that admits through the policy. */
  async function upgrade(
    headers: Record<string, string>,
  ): Promise<{ admitted: boolean; status: number | null; body: string; told: string[] }> {
    let admitted = false;
    const told: string[] = [];
    const server = createServer();
    server.on("upgrade", (request, socket) => {
      admitted = admitUpgrade(policy(), request, socket, (refusal) => told.push(refusal.code));
      if (admitted)
        socket.end(
          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        );
    });
    await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
    try {
      const { port: serverPort } = server.address() as AddressInfo;
      return await new Promise((resolveResponse, rejectResponse) => {
        const request = httpRequest({
          host: "127.0.0.1",
          port: serverPort,
          path: "/stream",
          headers: { Connection: "Upgrade", Upgrade: "websocket", ...headers },
        });
        request.on("response", (response: IncomingMessage) => {
          let body = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => {
            body += chunk;
          });
          response.on("end", () =>
            resolveResponse({ admitted, status: response.statusCode ?? null, body, told }),
          );
        });
        request.on("upgrade", (_response, socket) => {
          socket.destroy();
          resolveResponse({ admitted, status: 101, body: "", told });
        });
        request.on("error", rejectResponse);
        request.end();
      });
    } finally {
      server.closeAllConnections();
      await new Promise((resolveClose) => server.close(resolveClose));
    }
  }

  it("refuses a foreign or null Origin and a rebound Host with 403, and admits its own origin and none", async () => {
    for (const origin of ["https://attacker.example", "null", "http://127.0.0.1:5555"]) {
      const refused = await upgrade({ Host: "127.0.0.1:7420", Origin: origin });
      expect(refused.admitted, origin).toBe(false);
      expect(refused.status).toBe(403);
      expect(JSON.parse(refused.body).error.code).toBe("origin_not_allowed");
      expect(refused.told).toEqual(["origin_not_allowed"]);
    }
    const rebound = await upgrade({
      Host: "attacker.example:7420",
      Origin: "http://attacker.example:7420",
    });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body).error.code).toBe("host_not_allowed");
    expect(
      (await upgrade({ Host: "127.0.0.1:7420", Origin: "http://127.0.0.1:7420" })).status,
    ).toBe(101);
    expect((await upgrade({ Host: "127.0.0.1:7420" })).status).toBe(101);
    // A socket both reads and writes: a cross-site one is refused even without Origin.
    expect((await upgrade({ Host: "127.0.0.1:7420", "Sec-Fetch-Site": "cross-site" })).status).toBe(
      403,
    );
  });
});
