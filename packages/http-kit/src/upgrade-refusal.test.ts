import { createServer, request as httpRequest, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { type ErrorCode, WireHeader, WireSubprotocol } from "@deckhand/wire";
import { describe, expect, it } from "vitest";
import type { HttpStatusOf } from "./error-status.ts";
import { refuseUpgrade, upgradeBearerToken } from "./upgrade-refusal.ts";

// These tests check how an answer is written, whatever its status and code; the status map has
// its own tests (error-status.test.ts), so the types that tie the two together are loosened here.
const anyStatus = (status: number) => status as HttpStatusOf<ErrorCode>;
const anyCode = (code: string) => code as ErrorCode;

function refusalText(status: number): string {
  let written = "";
  refuseUpgrade(
    {
      end: (response: string) => {
        written = response;
      },
    },
    anyStatus(status),
    anyCode("some_code"),
    "what to do",
  );
  return written;
}

/** Refuses an upgrade on a real server and reads the answer as an HTTP client does. */
async function refusedUpgrade(
  status: number,
): Promise<{ response: IncomingMessage; body: string }> {
  const server = createServer();
  server.on("upgrade", (_request, socket) =>
    refuseUpgrade(socket, anyStatus(status), anyCode("some_code"), "why"),
  );
  await new Promise<void>((resolveListen) => server.listen(0, "127.0.0.1", resolveListen));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise((resolveResponse, rejectResponse) => {
      const request = httpRequest({
        host: "127.0.0.1",
        port,
        path: "/socket",
        headers: { Connection: "Upgrade", Upgrade: "websocket" },
      });
      request.on("response", (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          body += chunk;
        });
        response.on("end", () => resolveResponse({ response, body }));
      });
      request.on("upgrade", () => rejectResponse(new Error("the upgrade was accepted")));
      request.on("error", rejectResponse);
      request.end();
    });
  } finally {
    await new Promise((resolveClose) => server.close(resolveClose));
  }
}

describe("refuseUpgrade", () => {
  it("answers an upgrade with a plain HTTP error in the API's shape, with WWW-Authenticate on 401", async () => {
    const { response, body } = await refusedUpgrade(401);
    expect(response.statusCode).toBe(401);
    expect(response.statusMessage).toBe("Unauthorized");
    expect(response.headers["www-authenticate"]).toBe("Bearer");
    expect(response.headers["content-type"]).toBe("application/json");
    expect(response.headers.connection).toBe("close");
    expect(JSON.parse(body)).toEqual({ error: { code: "some_code", message: "why" } });
  });

  it("sends WWW-Authenticate only with a 401", async () => {
    const { response } = await refusedUpgrade(403);
    expect(response.statusCode).toBe(403);
    expect(response.headers["www-authenticate"]).toBeUndefined();
  });

  it("writes exactly the status line, headers and body, with a byte-length Content-Length", () => {
    const body = JSON.stringify({ error: { code: "some_code", message: "what to do" } });
    expect(refusalText(404)).toBe(
      `HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    // "é" is two bytes in UTF-8: the length counts bytes, not characters.
    const accented = JSON.stringify({ error: { code: "c", message: "é" } });
    expect(accented.length).toBe(36);
    let written = "";
    refuseUpgrade(
      {
        end: (response: string) => {
          written = response;
        },
      },
      400,
      anyCode("c"),
      "é",
    );
    expect(written).toContain("\r\nContent-Length: 37\r\n");
  });

  it("names the reason of each status it is used with, and says Error for any other", () => {
    const reasons = [400, 401, 403, 404, 500, 503, 409].map(
      (status) => /^HTTP\/1\.1 \d+ ([^\r]+)\r\n/.exec(refusalText(status))?.[1],
    );
    expect(reasons).toEqual([
      "Bad Request",
      "Unauthorized",
      "Forbidden",
      "Not Found",
      "Internal Server Error",
      "Service Unavailable",
      "Error",
    ]);
  });
});

describe("upgradeBearerToken", () => {
  const authorization = WireHeader.authorization.toLowerCase();

  it("reads the token from Authorization: Bearer, whatever the scheme's case", () => {
    expect(upgradeBearerToken({ headers: { [authorization]: "Bearer abc " } })).toBe("abc");
    expect(upgradeBearerToken({ headers: { [authorization]: "bearer abc" } })).toBe("abc");
  });

  it("reads the token from a bearer subprotocol when there is no Bearer header", () => {
    const offered = `${WireSubprotocol.gitWatch}, ${WireSubprotocol.bearerPrefix}from-protocol`;
    expect(upgradeBearerToken({ headers: { "sec-websocket-protocol": offered } })).toBe(
      "from-protocol",
    );
    expect(
      upgradeBearerToken({
        headers: { [authorization]: "Basic xyz", "sec-websocket-protocol": offered },
      }),
    ).toBe("from-protocol");
  });

  it("prefers the header to the subprotocol, and is null when neither carries a token", () => {
    expect(
      upgradeBearerToken({
        headers: {
          [authorization]: "Bearer from-header",
          "sec-websocket-protocol": `${WireSubprotocol.bearerPrefix}from-protocol`,
        },
      }),
    ).toBe("from-header");
    expect(upgradeBearerToken({ headers: {} })).toBeNull();
    expect(
      upgradeBearerToken({ headers: { "sec-websocket-protocol": WireSubprotocol.gitWatch } }),
    ).toBeNull();
  });
});
