import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { generateApiReports, publishedPackages } from "./api-report.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

describe("api reports", () => {
  const reports = generateApiReports(root);

  it("cover every published package", () => {
    expect(reports.map((report) => report.packageName)).toEqual(
      publishedPackages(root).map((published) => published.name),
    );
  });

  it.each(reports.map((report) => [report.reportPath, report] as const))(
    "%s matches the sources (run pnpm api-report)",
    (reportPath, report) => {
      let checkedIn: string;
      try {
        checkedIn = readFileSync(path.join(root, reportPath), "utf8");
      } catch {
        throw new Error(`${reportPath} is missing: run pnpm api-report and commit it`);
      }
      expect(checkedIn, `${reportPath} is stale: run pnpm api-report and commit it`).toBe(
        report.content,
      );
    },
  );
});
