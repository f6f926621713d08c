// What a process that runs batch steps has, in one object: the launcher its steps start through
// (the environment policy and the sandbox), its container runtime (given, or detected once), the
// Kubernetes cluster of `kubernetes` runs, model-provider access for `codingAgent` steps, the configured agent settings, the providers
// `acp` steps run, and the directories its checkouts and clones live in. The server and
// `deckhand executor` make one at start and hand it to the batch-run service, whose workspace
// jobs and changeset hooks run their steps with it.
import { join } from "node:path";
import type { BatchSpec } from "@deckhand/batch-spec";
import {
  type ContainerRuntime,
  type ContainerRuntimeDetection,
  type DetectContainerRuntimeOptions,
  detectContainerRuntime,
} from "@deckhand/container-runtime";
import type { KubernetesStepRunner } from "@deckhand/kubernetes-runtime";
import type { KubernetesRuntimeConfig } from "@deckhand/kubernetes-runtime/config";
import { ProcessLauncher } from "@deckhand/sandbox";
import { type AgentEnvironmentPolicy, agentEnvironmentPolicy } from "@deckhand/secrets";
import type { BatchCodingAgentOptions } from "@deckhand/wire";
import type { AcpAgentStepOptions } from "./acp-step-options.ts";
import { BatchesError } from "./batches-error.ts";
import {
  type CodingAgentOptions,
  codingAgentOptions,
  type ModelProviderAccess,
} from "./coding-agent-step.ts";
import { type KubernetesRunnerSource, kubernetesRunnerSource } from "./kubernetes-step-runner.ts";
import { keepRecent } from "./recent-runs.ts";
import type { ImageLookups, StepRuntimeChoice } from "./step-placement.ts";

/** Where a process keeps what batch jobs need on disk. */
export interface BatchDirectories {
  /** Git URL hosts' mirrors. */
  cacheDirectory: string;
  /** Workspace checkouts while their job runs. */
  workDirectory: string;
  /** Changeset hooks' checkouts while they run. */
  hookDirectory: string;
  /**
   * Where local `codingAgent` steps install agents, as `<directory>/<type>/<version>`: absolute,
   * or starting with `$HOME/`; without it, `$HOME/.deckhand/agents` of the environment steps
   * run in.
   */
  agentInstallDirectory?: string;
  /** The same inside a step's container; default `/tmp/deckhand/agents`. */
  containerAgentInstallDirectory?: string;
}

/** The directories of a data directory: clones, checkouts and agent installs all inside it. */
export function batchDirectories(
  dataDir: string,
): Required<Omit<BatchDirectories, "containerAgentInstallDirectory">> {
  return {
    cacheDirectory: join(dataDir, "cache", "repositories"),
    workDirectory: join(dataDir, "workspaces", "batches"),
    hookDirectory: join(dataDir, "workspaces", "hooks"),
    agentInstallDirectory: join(dataDir, "agents"),
  };
}

export interface ExecutionEnvironmentOptions {
  directories: BatchDirectories;
  /**
   * Starts local steps, hooks and `acp` agents: the process's environment policy and sandbox.
   * Without one, they run unconfined with `environmentPolicy` over `outerEnvironment`.
   */
  launcher?: ProcessLauncher;
  /** What of `outerEnvironment` steps inherit (Deckhand's secrets never). */
  environmentPolicy?: AgentEnvironmentPolicy;
  /** The environment steps start from, before the policy; default this process's. */
  outerEnvironment?: Readonly<Record<string, string | undefined>>;
  /**
   * The container runtime of container steps (null for none). When absent it is detected once,
   * at the first run that needs one, with `containerDetection` (e.g. `restrictedHost` for Podman
   * on hosts that need runc and fixed ulimits without a containers.conf).
   */
  containerRuntime?: ContainerRuntime | null;
  containerDetection?: DetectContainerRuntimeOptions;
  /**
   * config.json's `kubernetes`: the cluster where the steps of `kubernetes` runs run as Jobs,
   * connected to (with `outerEnvironment`) at the first such step.
   */
  kubernetes?: KubernetesRuntimeConfig;
  /**
   * Lends each job a model-provider token for its `codingAgent` steps (the server's
   * `leaseModelProvider`); without it such steps fail naming what is missing.
   */
  modelProvider?: ModelProviderAccess;
  /**
   * Agent versions, models and install source (config.json's `codingAgent`), per agent type,
   * unless a run's `coding_agent` says otherwise.
   */
  codingAgent?: BatchCodingAgentOptions;
  /**
   * Deckhand's providers, which `codingAgent` steps of type `acp` run: specs naming a provider
   * there is not are refused when they are previewed, and the steps start the provider's agent.
   */
  acpAgents?: AcpAgentStepOptions;
}

/** How a run's steps find their container runtime, as the step placer takes it. */
export interface ContainerAccess {
  containerRuntime?: ContainerRuntime | null;
  containerDetection?: Promise<ContainerRuntimeDetection>;
}

export class ExecutionEnvironment {
  readonly directories: BatchDirectories;
  readonly launcher: ProcessLauncher;
  /** The environment steps start from, before the policy (hooks read push tokens from it). */
  readonly outerEnvironment: Readonly<Record<string, string | undefined>>;
  readonly modelProvider: ModelProviderAccess | undefined;
  /**
   * Which shell each image's `run` scripts get (bash when it has one), shared by every run of
   * the process so an image is probed once; keyed by the image's id, so a rebuilt tag is probed
   * again.
   */
  readonly containerShells = new Map<string, Promise<string>>();
  readonly #options: ExecutionEnvironmentOptions;
  #detection: Promise<ContainerRuntimeDetection> | undefined;
  /** Whether #detection settled without a runtime. */
  #foundNone = false;
  readonly #runImages = new Map<string, ImageLookups>();
  readonly #kubernetes: KubernetesRunnerSource | undefined;

  constructor(options: ExecutionEnvironmentOptions) {
    this.#options = options;
    this.directories = options.directories;
    this.outerEnvironment = options.outerEnvironment ?? process.env;
    this.launcher =
      options.launcher ??
      new ProcessLauncher({
        capability: { kind: "none", reason: "no sandbox was configured for this run" },
        policy: options.environmentPolicy ?? agentEnvironmentPolicy(),
        sourceEnvironment: this.outerEnvironment,
      });
    this.modelProvider = options.modelProvider;
    this.#kubernetes =
      options.kubernetes === undefined
        ? undefined
        : kubernetesRunnerSource(options.kubernetes, this.outerEnvironment);
  }

  /**
   * How a run's steps find their container runtime: the one given, or a detection made once per
   * process (`info` and a trial container take a while, and the answer does not change), whose
   * reasons a step that needs a runtime reports when none works. Nothing for a run that needs
   * no container.
   */
  containers(
    spec: BatchSpec,
    choice: StepRuntimeChoice,
    options: { detectAgainAfterNone?: boolean } = {},
  ): ContainerAccess {
    if (this.#options.containerRuntime !== undefined) {
      return { containerRuntime: this.#options.containerRuntime };
    }
    const wantsContainer =
      (choice === "auto" || choice === "container") &&
      (spec.steps ?? []).some((step) => step.container !== undefined);
    if (!wantsContainer) return {};
    // A detection that found no runtime answers the run it was made for, and every job's
    // placement after it, but a new run (`detectAgainAfterNone`, its creation) detects again:
    // Podman installed or a Docker daemon started meanwhile is found without a restart.
    if (options.detectAgainAfterNone === true && this.#foundNone) this.#detection = undefined;
    if (this.#detection === undefined) {
      const detection = detectContainerRuntime(this.#options.containerDetection);
      this.#detection = detection;
      this.#foundNone = false;
      void detection.then(
        (found) => {
          if (this.#detection === detection) this.#foundNone = found.runtime === null;
        },
        () => {
          if (this.#detection === detection) this.#foundNone = true;
        },
      );
    }
    return { containerDetection: this.#detection };
  }

  /**
   * The images a run's steps found, shared by every placement of the run in this process: its
   * creation (which looks its cached results up by image id) and its jobs, so a run looks each
   * image up once and runs it as it was found. Kept for the RUNS_KEPT runs seen most recently.
   */
  runImages(runId: string): ImageLookups {
    const found = this.#runImages.get(runId) ?? new Map();
    keepRecent(this.#runImages, runId, found);
    return found;
  }

  /** Keeps the look-ups made before the run had an id (its creation) for the run's jobs. */
  keepRunImages(runId: string, images: ImageLookups): void {
    keepRecent(this.#runImages, runId, images);
  }

  /**
   * The cluster the steps of a `kubernetes` run run in, connected to once; rejects, saying what
   * to do, when this process was given no `kubernetes` configuration.
   */
  async kubernetes(): Promise<KubernetesStepRunner> {
    if (this.#kubernetes === undefined) {
      throw new BatchesError(
        "invalid_config",
        "the run uses the kubernetes runtime and this executor has no `kubernetes` section in its config.json; add one (docs/operations/kubernetes.md) or run with --runtime auto",
      );
    }
    return this.#kubernetes();
  }

  /**
   * The settings of `codingAgent` steps: the configured ones with a run's own (its
   * `coding_agent` option) on top, installed in this process's agent directory.
   */
  codingAgent(run?: BatchCodingAgentOptions): CodingAgentOptions {
    const { agentInstallDirectory, containerAgentInstallDirectory } = this.directories;
    return {
      ...codingAgentOptions(this.#options.codingAgent, run),
      ...(agentInstallDirectory !== undefined ? { installDirectory: agentInstallDirectory } : {}),
      ...(containerAgentInstallDirectory !== undefined
        ? { containerInstallDirectory: containerAgentInstallDirectory }
        : {}),
    };
  }

  /**
   * The providers `acp` steps run, with the policy of steps that name none: the run's, else the
   * configured one. Undefined when the process was given no providers.
   */
  acpAgents(run?: BatchCodingAgentOptions): AcpAgentStepOptions | undefined {
    const agents = this.#options.acpAgents;
    if (agents === undefined) return undefined;
    const chosen = run?.acp_permissions ?? this.#options.codingAgent?.acp_permissions;
    return { ...agents, ...(chosen === undefined ? {} : { defaultPermissions: chosen }) };
  }

  /** The providers `acp` steps may name, as given (for checking specs). */
  get acpProviders(): AcpAgentStepOptions | undefined {
    return this.#options.acpAgents;
  }
}
