// One Chromium for the browser suites: Debian's binary driven by playwright-core (never
// `playwright install`), the screenshots every main screen writes at phone and desktop width,
// and the axe-core accessibility check each of them passes. Shared so the suites cannot drift.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { expect } from "vitest";
import { repositoryRoot } from "./deckhand-up.ts";

export const CHROMIUM = "/usr/bin/chromium";
export const SCREENSHOTS = join(repositoryRoot, "e2e/screenshots");

export interface OpenedBrowser {
  context: BrowserContext;
  page: Page;
  /** Uncaught errors and console errors in the page that `allowConsoleErrors` did not excuse. */
  pageErrors: string[];
  close(): Promise<void>;
}

export interface OpenBrowserOptions {
  /** Signs the page in from the start with this admin token (kept in sessionStorage). */
  token?: string;
  /**
   * Console errors a suite provokes on purpose (a 401, a 412), which are not failures. Tested
   * against the message followed by ` (<its url>)` when it has one.
   */
  allowConsoleErrors?: RegExp;
  width?: number;
  height?: number;
  /** More Chromium switches (`--host-resolver-rules=…` to give a test name an address, say). */
  args?: string[];
}

/** Launches Debian's Chromium headless with a throwaway profile. */
export async function openBrowser(options: OpenBrowserOptions = {}): Promise<OpenedBrowser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does so)`);
  }
  if (!existsSync(join(repositoryRoot, "apps/web/dist/index.html"))) {
    throw new Error("apps/web/dist is missing: run pnpm build first");
  }
  const profileDir = mkdtempSync(join(tmpdir(), "deckhand-chromium-"));
  const context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...(options.args ?? []),
    ],
    viewport: { width: options.width ?? 1440, height: options.height ?? 900 },
  });
  // Every Content Security Policy violation becomes a console error, so a suite's "no error in
  // the page" check covers them, including the ones the browser reports without logging (a
  // refused eval that the page caught).
  await context.addInitScript(`document.addEventListener("securitypolicyviolation", (event) => {
    console.error("Content Security Policy violation: " + event.violatedDirective + " at " + event.sourceFile + ":" + event.lineNumber + ":" + event.columnNumber);
  });`);
  if (options.token !== undefined) {
    await context.addInitScript(
      `sessionStorage.setItem("deckhand.token", ${JSON.stringify(options.token)});`,
    );
  }
  const page = context.pages()[0] ?? (await context.newPage());
  // A locator waits for its element; on a busy machine the page can take well over 15 s to show it.
  page.setDefaultTimeout(60_000);
  const pageErrors: string[] = [];
  page.on("pageerror", (error) => pageErrors.push(error.message));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    // A failed resource names itself only in the message's location, so an excuse may name it.
    const url = message.location().url;
    const text = `${message.text()}${url ? ` (${url})` : ""}`;
    if (options.allowConsoleErrors?.test(text)) return;
    pageErrors.push(`console: ${text}`);
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    context,
    page,
    pageErrors,
    async close() {
      await context.close();
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}

const axeSource = readFileSync(
  createRequire(import.meta.url).resolve("axe-core/axe.min.js"),
  "utf8",
);

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * Runs axe-core (WCAG 2.x A and AA rules) on the page as it stands and fails on any serious or
 * critical violation, naming the rule and the elements.
 */
export async function expectAccessible(page: Page, screen: string): Promise<void> {
  const loaded = await page.evaluate("typeof window.axe === 'object'");
  // Evaluated through the DevTools protocol, not added as a <script>: the UI's Content Security
  // Policy (rightly) refuses inline scripts, and the check must not need it loosened.
  if (!loaded) await page.evaluate(`${axeSource}\n;undefined`);
  // A string: this package's types have no DOM, and the expression runs in the page.
  const violations = (await page.evaluate(
    `axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] }, resultTypes: ["violations"] })
      .then((result) => result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`,
  )) as AxeViolation[];
  const serious = violations.filter(
    (violation) => violation.impact === "serious" || violation.impact === "critical",
  );
  const described = serious.map(
    (violation) =>
      `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes
        .slice(0, 5)
        .map((node) => JSON.stringify(node.target))
        .join(", ")}`,
  );
  expect(described, `${screen}: serious accessibility violations`).toEqual([]);
}

/**
 * Writes the screen's screenshots at 360 px and 1,440 px (and 1,440 px dark), checks that
 * nothing scrolls sideways at either width, and that the screen passes axe in both themes.
 */
export async function capture(page: Page, name: string): Promise<void> {
  const viewport = page.viewportSize();
  for (const width of [360, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true });
    const overflow = Number(
      await page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth",
      ),
    );
    expect(
      overflow,
      `${name} at ${width} px scrolls sideways by ${overflow} px`,
    ).toBeLessThanOrEqual(0);
  }
  await expectAccessible(page, name);
  // The dark theme follows the system setting.
  await page.emulateMedia({ colorScheme: "dark" });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}-1440-dark.png`), fullPage: true });
  await expectAccessible(page, `${name} (dark)`);
  await page.emulateMedia({ colorScheme: "light" });
  if (viewport) await page.setViewportSize(viewport);
}

/**
 * Records measured budgets (printed, and merged into e2e/screenshots/budgets.json): timings are
 * measured and kept, never asserted, as a shared CI machine makes them noisy.
 */
export function recordBudgets(values: Record<string, number>): void {
  const path = join(SCREENSHOTS, "budgets.json");
  mkdirSync(SCREENSHOTS, { recursive: true });
  const current = existsSync(path)
    ? (JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>)
    : {};
  writeFileSync(path, `${JSON.stringify({ ...current, ...values }, null, 2)}\n`);
  for (const [name, value] of Object.entries(values)) console.log(`budget ${name}: ${value}`);
}

/**
 * Fails when the page logged an error on the way; the server's own error lines go with it, since
 * a failed request says in the page only that it failed.
 */
export function expectNoPageErrors(browser: OpenedBrowser, server: { output: string[] }): void {
  const serverErrors = server.output.filter((line) => /"level":(50|60)/.test(line));
  expect(
    browser.pageErrors,
    serverErrors.length > 0 ? `the server logged:\n${serverErrors.join("\n")}` : undefined,
  ).toEqual([]);
}
