// What every host's client shares: its connection and name, one way to run an operation of its
// library (a failure becomes a CodeHostError that names the operation), a thing already gone as
// no error, and the edits of a pull request that each host makes through its own edit call.
import type {
  CodeHostCapabilities,
  PullRequest,
  UpdatePullRequestInput,
} from "./code-host-client.ts";
import { CodeHostError } from "./code-host-error.ts";
import { type CodeHostConnection, connectionName } from "./connection.ts";
import { type TitleDraftStyle, writeDraftTitle } from "./draft-title.ts";
import { hostFailure } from "./host-failure.ts";

/**
 * A host's answer other than 2xx, thrown by a client's own request code (a requester, an answer
 * reader) so that the operation it was for is named where it is caught.
 */
export class FailedAnswer extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    super(`HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** The edits Deckhand makes to a pull request, in its own words; each host maps them to its own. */
export interface PullRequestEdit {
  title?: string;
  body?: string;
  state?: "open" | "closed";
}

/** The base of each host's client; each says it `implements CodeHostClient` itself. */
export abstract class HostClientBase {
  /** What most hosts can do; a host that cannot do one says so in its own. */
  readonly capabilities: CodeHostCapabilities = {
    drafts: true,
    reopen: true,
    merge: true,
    mergeability: true,
  };
  readonly connection: CodeHostConnection;
  protected readonly name: string;

  constructor(connection: CodeHostConnection) {
    this.connection = connection;
    this.name = connectionName(connection);
  }

  /** How the host names a pull request, in messages: `pull request #12`, `merge request !12`. */
  protected reference(number: number): string {
    return `pull request #${number}`;
  }

  /** The status and body a failure of the host's library carries. */
  protected failureDetails(error: unknown): { status?: number; body?: unknown } {
    return error instanceof FailedAnswer ? { status: error.status, body: error.body } : {};
  }

  /** Runs one operation; a failure becomes a CodeHostError that names it. */
  protected async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw hostFailure(error, this.name, operation, this.failureDetails(error));
    }
  }

  /** Runs one operation whose object may not be there: then (404, or `missing`) undefined. */
  protected async unlessMissing<T>(
    operation: string,
    run: () => Promise<T>,
    missing: readonly number[] = [404],
  ): Promise<T | undefined> {
    try {
      return await this.call(operation, run);
    } catch (error) {
      const status = CodeHostError.isInstance(error) ? error.status : undefined;
      if (status !== undefined && missing.includes(status)) return undefined;
      throw error;
    }
  }
}

/** A host whose one edit call changes a pull request's title, body and open or closed state. */
export abstract class EditingHostClient extends HostClientBase {
  protected abstract edit(
    repository: string,
    number: number,
    operation: string,
    edit: PullRequestEdit,
  ): Promise<PullRequest>;

  updatePullRequest(repository: string, number: number, input: UpdatePullRequestInput) {
    return this.edit(repository, number, `updating ${this.reference(number)}`, input);
  }

  closePullRequest(repository: string, number: number) {
    return this.edit(repository, number, `closing ${this.reference(number)}`, { state: "closed" });
  }

  reopenPullRequest(repository: string, pullRequest: PullRequest) {
    const { number } = pullRequest;
    return this.edit(repository, number, `reopening ${this.reference(number)}`, { state: "open" });
  }
}

/** A host that keeps a pull request's draft state in its title (GitLab's `Draft:`, Gitea's `WIP:`). */
export abstract class TitleDraftHostClient extends EditingHostClient {
  protected abstract readonly draftStyle: TitleDraftStyle;

  abstract getPullRequest(repository: string, number: number): Promise<PullRequest>;

  override async updatePullRequest(
    repository: string,
    number: number,
    input: UpdatePullRequestInput,
  ) {
    const edit: PullRequestEdit = {};
    if (input.title !== undefined) {
      // The draft marker lives in the title: keep it when the title changes.
      const current = await this.getPullRequest(repository, number);
      edit.title = writeDraftTitle(input.title, current.state === "draft", this.draftStyle);
    }
    if (input.body !== undefined) edit.body = input.body;
    return this.edit(repository, number, `updating ${this.reference(number)}`, edit);
  }

  setDraft(repository: string, pullRequest: PullRequest, draft: boolean) {
    const { number } = pullRequest;
    return this.edit(repository, number, `marking ${this.reference(number)}`, {
      title: writeDraftTitle(pullRequest.title, draft, this.draftStyle),
    });
  }
}
