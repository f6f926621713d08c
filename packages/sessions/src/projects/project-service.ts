import { rm } from "node:fs/promises";
import { basename, resolve } from "node:path";
import type { Database } from "@deckhand/db";
import { redactSecrets } from "@deckhand/secrets";
import type { CreateProjectRequest, Project, ProjectBranchList } from "@deckhand/wire";
import { type GitEnvironment, repositoryRoot, startingBranches } from "../git.ts";
import { requireProject } from "../required-rows.ts";
import { projectResource } from "../resources.ts";
import type { ProjectRow } from "../store/project-rows.ts";
import { SessionStore } from "../store/session-store.ts";
import { checkoutRoot, cloneProject, defaultBranchOf } from "./project-repository.ts";

export interface ProjectServiceOptions {
  db: Database;
  /** Where cloned projects go. */
  projectsDir: string;
  /** Credentials for git commands that reach a project's URL (see `SessionDomainOptions`). */
  gitEnvironment?: GitEnvironment | undefined;
}

/** Projects: a repository (a checkout on the server's machine, or a clone) sessions start in. */
export class ProjectService {
  readonly #store: SessionStore;
  readonly #projectsDir: string;
  readonly #gitEnvironment: GitEnvironment | undefined;

  constructor(options: ProjectServiceOptions) {
    this.#store = new SessionStore(options.db);
    this.#projectsDir = options.projectsDir;
    this.#gitEnvironment = options.gitEnvironment;
  }

  create(request: CreateProjectRequest): Promise<Project> {
    return this.#create(request, false);
  }

  /**
   * The project of a repository, found by where it is, or else created as `create` would: a
   * working copy is found by its top-level directory, a URL by the URL as given (the oldest such
   * project wins). Creating, `default_branch` is only a preference: a branch the repository
   * lacks (a working copy's remote-tracking branch, say) gives way to the checked-out one.
   */
  async forRepository(request: CreateProjectRequest): Promise<Project> {
    let existing: ProjectRow | undefined;
    if (request.repository_path !== undefined) {
      const root = await repositoryRoot(resolve(request.repository_path)).catch(() => null);
      if (root !== null) existing = await this.#store.projects.oldestOf({ path: root });
    } else if (request.repository_url !== undefined) {
      existing = await this.#store.projects.oldestOf({ url: request.repository_url });
    }
    if (existing) return projectResource(existing);
    return this.#create(request, true);
  }

  async list(): Promise<Project[]> {
    return (await this.#store.projects.list()).map(projectResource);
  }

  async get(projectId: string): Promise<Project> {
    return projectResource(await requireProject(this.#store, projectId));
  }

  /**
   * The branches a session of the project can start from, its default branch first and the
   * session branches Deckhand made (`deckhand/…`) left out.
   */
  async branches(projectId: string): Promise<ProjectBranchList> {
    const project = await requireProject(this.#store, projectId);
    const branches = (await startingBranches(project.repositoryPath!)).filter(
      (name) => name !== project.defaultBranch && !name.startsWith("deckhand/"),
    );
    return {
      default_branch: project.defaultBranch,
      branches: [project.defaultBranch, ...branches],
    };
  }

  async #create(request: CreateProjectRequest, preferBranch: boolean): Promise<Project> {
    const id = crypto.randomUUID();
    const cloned = request.repository_path === undefined;
    const repositoryPath = cloned
      ? await cloneProject(request.repository_url!, this.#projectsDir, id, this.#gitEnvironment)
      : await checkoutRoot(request.repository_path!);
    let defaultBranch: string;
    try {
      defaultBranch = await defaultBranchOf(repositoryPath, request.default_branch, preferBranch);
    } catch (error) {
      // A clone nobody's project will name is not left behind.
      if (cloned) await rm(repositoryPath, { recursive: true, force: true });
      throw error;
    }
    const row = await this.#store.projects.insert({
      id,
      name: redactSecrets(request.name ?? basename(repositoryPath)),
      repositoryPath,
      repositoryUrl: request.repository_url ?? null,
      defaultBranch,
    });
    return projectResource(row);
  }
}
