import type { IncomingHttpHeaders } from "node:http";
import { BlockList, isIP } from "node:net";
import type { Duplex } from "node:stream";
import type { MiddlewareHandler } from "hono";
import { HttpError } from "./http-error.ts";
import { refuseUpgrade } from "./upgrade-refusal.ts";

// Two attacks reach a server on loopback from a web page, and this module refuses both:
//
// - DNS rebinding: a page on attacker.example re-points its own name at 127.0.0.1 and then talks
//   to the server as if it were its own origin, reading every answer. The browser still sends
//   `Host: attacker.example`, so the server answers only Hosts that name it. An IP address in Host
//   cannot be rebound (rebinding needs a name the attacker controls), which is why a server that
//   listens beyond loopback accepts any address but still only its own names.
// - Cross-site requests: a page on any origin may send a POST (`mode: "no-cors"`, text/plain, no
//   preflight) or open a WebSocket to 127.0.0.1 without reading the answer, and that is enough to
//   act. Browsers say where such a request comes from (`Origin`, and `Sec-Fetch-Site` since 2020);
//   the server acts only on its own origin and the origins it is configured to trust. Clients
//   that are not browsers (curl, the CLI, executors, agent CLIs) send neither header and are
//   unaffected.

/** Loopback addresses: 127.0.0.0/8 and ::1 (IPv4-mapped forms such as ::ffff:127.0.0.1 match too). */
const LOOPBACK_ADDRESSES = new BlockList();
LOOPBACK_ADDRESSES.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK_ADDRESSES.addAddress("::1", "ipv6");

/** Addresses that mean "every interface" when listened on. */
const WILDCARD_ADDRESSES = new Set(["0.0.0.0", "::", ""]);

/** Methods that read: the same-origin policy already keeps their answers from other origins. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** `Sec-Fetch-Site` values of a request another site's page made (another port counts as same-site). */
const FOREIGN_FETCH_SITES = new Set(["cross-site", "same-site"]);

/** What an HTTP Host (or an authority) may look like: a name or IPv4, or an IPv6 in brackets, and a port. */
const HOST_SYNTAX = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9_.-]+))(?::(\d{1,5}))?$/;

/** The longest part of a header value an error message repeats. */
const ECHO_LIMIT = 100;

function isLoopbackAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return LOOPBACK_ADDRESSES.check(address, family === 6 ? "ipv6" : "ipv4");
}

function withoutBrackets(host: string): string {
  return host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
}

/**
 * Whether a listen address is loopback only: `localhost`, 127.0.0.0/8 or ::1 (brackets or not).
 * A server on anything else is reachable from other machines.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = withoutBrackets(host.trim().toLowerCase());
  return bare === "localhost" || isLoopbackAddress(bare);
}

/**
 * The canonical form of a host name or address already checked against HOST_SYNTAX (an IPv6
 * address without its brackets): lower case, an IPv4 address in dotted decimal, an IPv6 address
 * without brackets, and no trailing dot (`Example.COM.` is `example.com`); null for what no URL
 * can hold. The WHATWG URL parser does the normalising, as browsers do before they send Host.
 */
function canonicalHostname(hostname: string): string | null {
  let parsed: URL;
  try {
    parsed = new URL(`http://${hostname.includes(":") ? `[${hostname}]` : hostname}/`);
  } catch {
    return null;
  }
  const canonical = withoutBrackets(parsed.hostname).replace(/\.$/, "");
  return canonical === "" ? null : canonical;
}

/** A Host header (or an authority) split into its canonical host name and its port, if it has one. */
export interface HostParts {
  hostname: string;
  port: number | null;
}

/** Parses a Host header (`127.0.0.1:7420`, `[::1]:7420`, `Example.com`); null when it is not one. */
export function parseHostHeader(value: string): HostParts | null {
  const match = HOST_SYNTAX.exec(value);
  if (!match) return null;
  const hostname = canonicalHostname(match[1] ?? match[2]!);
  const port = match[3] === undefined ? null : Number(match[3]);
  if (hostname === null || (port !== null && port > 65_535)) return null;
  return { hostname, port };
}

/** The port a scheme's origins use when they name none. */
function defaultPortOf(scheme: string): number | null {
  if (scheme === "http" || scheme === "ws") return 80;
  if (scheme === "https" || scheme === "wss") return 443;
  return null;
}

/** An origin as it is compared: scheme, canonical host name and port (the default port filled in). */
interface OriginParts {
  scheme: string;
  hostname: string;
  port: number | null;
}

function originKey(origin: OriginParts): string {
  return `${origin.scheme}://${origin.hostname}:${origin.port ?? ""}`;
}

/**
 * Parses a serialized origin (`https://deckhand.example.com`, `http://127.0.0.1:7420`): a scheme
 * and a host, nothing else (a trailing slash is tolerated in configuration); null otherwise,
 * `null` (the opaque origin) included.
 */
function parseOrigin(value: string): OriginParts | null {
  const match = /^([a-z][a-z0-9+.-]*):\/\/([^/?#@]+)\/?$/i.exec(value.trim());
  if (!match) return null;
  const scheme = match[1]!.toLowerCase();
  const authority = parseHostHeader(match[2]!);
  if (authority === null) return null;
  return {
    scheme,
    hostname: authority.hostname,
    port: authority.port ?? defaultPortOf(scheme),
  };
}

/**
 * The canonical form of an allowed-hosts entry: a host name or address (`deckhand.example.com`,
 * `10.0.0.5`, `::1`), or a name with a leading dot for it and every name under it
 * (`.example.com`); null when it is neither. A port is no part of it: the Host check ignores
 * ports, since a rebinding page reaches the server on the server's own port anyway.
 */
export function normalizeHostPattern(entry: string): string | null {
  const trimmed = entry.trim();
  const subdomains = trimmed.startsWith(".");
  const body = subdomains ? trimmed.slice(1) : trimmed;
  const bracketed = isIP(body) === 6 ? `[${body}]` : body;
  const match = HOST_SYNTAX.exec(bracketed);
  if (!match || match[3] !== undefined) return null;
  const hostname = canonicalHostname(match[1] ?? match[2]!);
  if (hostname === null || (subdomains && isIP(hostname) !== 0)) return null;
  return subdomains ? `.${hostname}` : hostname;
}

/** The canonical form of an allowed-origins entry (`https://tools.example.com`), or null. */
export function normalizeOrigin(entry: string): string | null {
  const origin = parseOrigin(entry);
  if (origin === null || !/^https?$/.test(origin.scheme)) return null;
  const host = origin.hostname.includes(":") ? `[${origin.hostname}]` : origin.hostname;
  const port = origin.port === defaultPortOf(origin.scheme) ? "" : `:${origin.port}`;
  return `${origin.scheme}://${host}${port}`;
}

function echo(value: string): string {
  return JSON.stringify(value.length > ECHO_LIMIT ? `${value.slice(0, ECHO_LIMIT)}…` : value);
}

export interface OriginPolicyOptions {
  /** The address the server listens on: `127.0.0.1`, `::1`, `0.0.0.0`, a name. */
  listenHost: string;
  /** The URL people open when it is not the listen address (behind a proxy): its host and origin are allowed. */
  publicUrl?: string | null;
  /** More names the server answers to; `.example.com` is that name and every name under it. */
  allowedHosts?: readonly string[];
  /** More origins whose pages may act on the server (`https://tools.example.com`). */
  allowedOrigins?: readonly string[];
  /** What a refused Host's message tells the operator to do, e.g. "add it to allowedHosts in config.json". */
  hostAdvice: string;
  /** What a refused origin's message tells the operator to do, e.g. "add it to allowedOrigins in config.json". */
  originAdvice: string;
}

/** The request headers the policy reads; names in lower case, as Node gives them. */
export interface GuardedRequest {
  method: string;
  host: string | undefined;
  origin: string | undefined;
  fetchSite: string | undefined;
}

/** Why a request is refused: the wire code and the message for it. */
export interface OriginRefusal {
  code: "host_not_allowed" | "origin_not_allowed";
  message: string;
}

/**
 * Which Host names a server answers and which browser origins may act on it. Names: `localhost`
 * and loopback addresses always; any IP address when the server listens beyond loopback; the
 * listen address's name, the public URL's host and `allowedHosts`. Origins: the request's own
 * (its Origin names the Host it was sent to), the public URL's and `allowedOrigins`.
 */
export class OriginPolicy {
  readonly #beyondLoopback: boolean;
  readonly #names = new Set<string>(["localhost"]);
  readonly #suffixes: string[] = [];
  readonly #origins = new Set<string>();
  readonly #hostAdvice: string;
  readonly #originAdvice: string;

  /** Throws a TypeError naming an entry that is not a host, origin or URL (validate configuration first). */
  constructor(options: OriginPolicyOptions) {
    const listenHost = withoutBrackets(options.listenHost.trim().toLowerCase());
    this.#beyondLoopback = !isLoopbackHost(listenHost);
    this.#hostAdvice = options.hostAdvice;
    this.#originAdvice = options.originAdvice;
    const hosts = [...(options.allowedHosts ?? [])];
    if (this.#beyondLoopback && !WILDCARD_ADDRESSES.has(listenHost)) hosts.push(listenHost);
    if (options.publicUrl) {
      const origin = normalizeOrigin(new URL(options.publicUrl).origin);
      if (origin === null) throw new TypeError(`public URL ${options.publicUrl} is not http(s)`);
      this.#origins.add(originKey(parseOrigin(origin)!));
      hosts.push(new URL(options.publicUrl).hostname);
    }
    for (const entry of hosts) {
      const pattern = normalizeHostPattern(entry);
      if (pattern === null) throw new TypeError(`${echo(entry)} is not a host name or address`);
      if (pattern.startsWith(".")) this.#suffixes.push(pattern);
      else this.#names.add(pattern);
    }
    for (const entry of options.allowedOrigins ?? []) {
      const origin = normalizeOrigin(entry);
      if (origin === null) throw new TypeError(`${echo(entry)} is not an http(s) origin`);
      this.#origins.add(originKey(parseOrigin(origin)!));
    }
  }

  /** Whether a canonical host name is one of this server's. */
  #allowsHostname(hostname: string): boolean {
    if (this.#names.has(hostname)) return true;
    if (isIP(hostname) !== 0) return this.#beyondLoopback || isLoopbackAddress(hostname);
    return this.#suffixes.some(
      (suffix) => hostname === suffix.slice(1) || hostname.endsWith(suffix),
    );
  }

  /**
   * Why a request must be refused, or null when it may go on. A request without Host is let
   * through: browsers always send one, so it is no rebinding page, and Node answers HTTP/1.1
   * without one itself.
   */
  refusal(request: GuardedRequest): OriginRefusal | null {
    const host = request.host === undefined ? null : parseHostHeader(request.host);
    if (request.host !== undefined && (host === null || !this.#allowsHostname(host.hostname))) {
      return {
        code: "host_not_allowed",
        message: `Host ${echo(request.host)} is not one of this server's names; if you reach the server by that name, ${this.#hostAdvice}`,
      };
    }
    if (request.origin !== undefined) {
      if (this.#allowsOrigin(request.origin, host)) return null;
      return {
        code: "origin_not_allowed",
        message:
          request.origin === "null"
            ? "a browser request with Origin null (a sandboxed frame, a local file or a redirect) cannot act on this server; open the UI at the server's own address"
            : `a browser request from ${echo(request.origin)} cannot act on this server: only its own pages can; if that site is yours, ${this.#originAdvice}`,
      };
    }
    // No Origin: not a browser, or a browser's read. A foreign browser request that acts always
    // carries Origin today; Sec-Fetch-Site covers one that does not.
    if (
      !SAFE_METHODS.has(request.method.toUpperCase()) &&
      request.fetchSite !== undefined &&
      FOREIGN_FETCH_SITES.has(request.fetchSite.toLowerCase())
    ) {
      return {
        code: "origin_not_allowed",
        message: `a ${request.fetchSite} browser request cannot act on this server: only its own pages can; open the UI at the server's own address`,
      };
    }
    return null;
  }

  #allowsOrigin(value: string, host: HostParts | null): boolean {
    const origin = parseOrigin(value);
    if (origin === null) return false;
    if (this.#origins.has(originKey(origin))) return true;
    // The request's own origin: the page was served by the Host it sends to (ports compared with
    // the origin's scheme's default filled in, since a Host on a default port names none).
    return (
      host !== null &&
      origin.hostname === host.hostname &&
      origin.port === (host.port ?? defaultPortOf(origin.scheme))
    );
  }
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Refuses, before anything else runs, a request whose Host is not the server's (403
 * `host_not_allowed`) or that a browser sent from another origin (403 `origin_not_allowed`).
 * Mount it first on every route, the static UI included.
 */
export function guardOrigin(policy: OriginPolicy): MiddlewareHandler {
  return async (context, next) => {
    const refusal = policy.refusal({
      method: context.req.method,
      // A Request made in process (hono's app.request) has no Host header; its URL says it.
      host: context.req.header("host") ?? new URL(context.req.url).host,
      origin: context.req.header("origin"),
      fetchSite: context.req.header("sec-fetch-site"),
    });
    if (refusal !== null) throw new HttpError(403, refusal.code, refusal.message);
    await next();
  };
}

/**
 * Checks a WebSocket upgrade as `guardOrigin` checks a request: an upgrade always counts as one
 * that acts, since the page reads and writes the socket. Answers a refused one with 403, tells
 * `onRefused` why (an upgrade passes no request log), and returns false; true when it may go on.
 */
export function admitUpgrade(
  policy: OriginPolicy,
  request: { url?: string | undefined; headers: IncomingHttpHeaders },
  socket: Duplex,
  onRefused?: (refusal: OriginRefusal) => void,
): boolean {
  const refusal = policy.refusal({
    // Whatever the method says, a socket both reads and writes.
    method: "CONNECT",
    host: single(request.headers.host),
    origin: single(request.headers.origin),
    fetchSite: single(request.headers["sec-fetch-site"]),
  });
  if (refusal === null) return true;
  onRefused?.(refusal);
  socket.on("error", () => socket.destroy());
  refuseUpgrade(socket, 403, refusal.code, refusal.message);
  return false;
}
