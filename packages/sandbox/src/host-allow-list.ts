/** Ports a pattern without `:port` allows: HTTPS and plain HTTP. */
const DEFAULT_PORTS: readonly number[] = [443, 80];

interface HostRule {
  /** Lower-case host, without the `*.` of a wildcard rule. */
  host: string;
  /** `*.example.com`: any subdomain of the host, not the host itself. */
  subdomains: boolean;
  ports: readonly number[];
}

function parseRule(pattern: string): HostRule {
  const lower = pattern.toLowerCase();
  const colon = lower.lastIndexOf(":");
  const hostPart = colon === -1 ? lower : lower.slice(0, colon);
  const ports = colon === -1 ? DEFAULT_PORTS : [Number(lower.slice(colon + 1))];
  const subdomains = hostPart.startsWith("*.");
  return { host: subdomains ? hostPart.slice(2) : hostPart, subdomains, ports };
}

/**
 * Which `host:port` destinations a sandboxed process may reach through the egress proxy. Names
 * are compared as text, never resolved: an address literal matches only a rule that names it,
 * and `localhost` or 127.0.0.1 only when a rule says so explicitly.
 */
export class HostAllowList {
  readonly #rules: readonly HostRule[];

  constructor(patterns: Iterable<string>) {
    this.#rules = [...patterns].map(parseRule);
  }

  get empty(): boolean {
    return this.#rules.length === 0;
  }

  allows(host: string, port: number): boolean {
    const name = host
      .toLowerCase()
      .replace(/\.$/, "")
      .replace(/^\[(.*)\]$/, "$1");
    return this.#rules.some(
      (rule) =>
        rule.ports.includes(port) &&
        (rule.subdomains ? name.endsWith(`.${rule.host}`) : name === rule.host),
    );
  }
}
