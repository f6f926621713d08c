type Fetch = (request: Request) => Response | Promise<Response>;

/**
 * Where this server listens, once it does. Parts made before the listener need it later: the
 * sandbox's model-proxy socket forwards to the app, agent turns and provider probes point
 * agents at the URL, and probes may start (while the server warms up) before there is one.
 */
export class ServerEndpoint {
  /** The URL once the server listens; rejects if it stops before it ever listened. */
  readonly listeningUrl: Promise<string>;
  #url: string | null = null;
  #port: number | null = null;
  #fetch: Fetch | null = null;
  #listening: (url: string) => void = () => {};
  #notListening: (error: Error) => void = () => {};

  constructor() {
    this.listeningUrl = new Promise<string>((resolveUrl, rejectUrl) => {
      this.#listening = resolveUrl;
      this.#notListening = rejectUrl;
    });
    this.listeningUrl.catch(() => {});
  }

  /** The URL; throws before the server listens. */
  url(): string {
    if (this.#url === null) throw new Error("the server is not listening yet");
    return this.#url;
  }

  /** The port, or null before the server listens. */
  port(): number | null {
    return this.#port;
  }

  /** Serves `request` with the app; a 503 while the server is starting. */
  fetch(request: Request): Response | Promise<Response> {
    if (this.#fetch === null) return new Response("the server is starting", { status: 503 });
    return this.#fetch(request);
  }

  /** The server listens at `url` on `port`, answering with `fetch`. */
  listened(url: string, port: number, fetch: Fetch): void {
    this.#url = url;
    this.#port = port;
    this.#fetch = fetch;
    this.#listening(url);
  }

  /** The server stopped before it listened: whoever waits for its URL gives up. */
  abandon(): void {
    this.#notListening(new Error("the server stopped before it listened"));
  }
}
