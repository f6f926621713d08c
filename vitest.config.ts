import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*", "db", "e2e", "tooling/api-report"],
    // Two cores: keep the suite's parallelism predictable and leave room for the processes
    // the process-manager tests start.
    maxWorkers: 2,
    // The JSON report is what .ci/run turns into its one-line summary.
    reporters: ["default", ["json", { outputFile: "node_modules/.vitest/report.json" }]],
  },
});
