import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { generateApiReports } from "./api-report.ts";

// Regenerates every published package's api-report.md (`pnpm api-report` at the root).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
for (const report of generateApiReports(root)) {
  writeFileSync(path.join(root, report.reportPath), report.content);
  const forgotten =
    report.forgottenExports.length === 0
      ? ""
      : ` (forgotten exports: ${report.forgottenExports.join(", ")})`;
  console.log(`${report.reportPath}: ${report.exportNames.length} exports${forgotten}`);
}
