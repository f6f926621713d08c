import { type Executor, projects } from "@deckhand/db";
import { asc, desc, eq } from "drizzle-orm";

export type ProjectRow = typeof projects.$inferSelect;

/** Queries of `projects`. */
export class ProjectRows {
  readonly #executor: Executor;

  constructor(executor: Executor) {
    this.#executor = executor;
  }

  async get(projectId: string): Promise<ProjectRow | undefined> {
    const [row] = await this.#executor.select().from(projects).where(eq(projects.id, projectId));
    return row;
  }

  /** The oldest project of a repository: a working copy by its top-level directory, or a URL. */
  async oldestOf(
    repository: { path: string; url?: undefined } | { url: string; path?: undefined },
  ): Promise<ProjectRow | undefined> {
    const [row] = await this.#executor
      .select()
      .from(projects)
      .where(
        repository.path !== undefined
          ? eq(projects.repositoryPath, repository.path)
          : eq(projects.repositoryUrl, repository.url),
      )
      .orderBy(asc(projects.createdAt))
      .limit(1);
    return row;
  }

  /** Every project, newest first. */
  list(): Promise<ProjectRow[]> {
    return this.#executor.select().from(projects).orderBy(desc(projects.createdAt));
  }

  async insert(values: typeof projects.$inferInsert): Promise<ProjectRow> {
    const [row] = await this.#executor.insert(projects).values(values).returning();
    return row!;
  }
}
