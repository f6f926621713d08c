// Scripted ACP agent (agent side of the ACP SDK), the probe target of @deckhand/providers.
export {
  type ScriptedAcpAgentCommandOptions,
  scriptedAcpAgentCommand,
  scriptedAcpAgentPath,
} from "./acp-agent/scripted-acp-command.ts";
export {
  type ParsedScriptedAgentArguments,
  parseScriptedAgentArguments,
  SCRIPTED_AGENT_MODES,
  SCRIPTED_AGENT_VERSION,
  type ScriptedAgentMode,
  type ScriptedAgentOptions,
} from "./acp-agent/scripted-acp-options.ts";
// Prompt directives of the scripted ACP agent (write, read, run, edit, slow, crash, ...).
export {
  parseScriptedPrompt,
  SCRIPTED_SLOW_DEFAULT_MS,
  type ScriptedPrompt,
  scriptedPrompt,
} from "./acp-agent/scripted-acp-prompts.ts";
export {
  OPENCODE_HOSTED_MODEL,
  QWEN_OPENAI_AUTH_METHOD,
  type ScriptedAgentScript,
  SKILL_META,
  scriptedAgentCommands,
  scriptedAgentModels,
  scriptedAgentModes,
  scriptedAgentScript,
} from "./acp-agent/scripted-acp-script.ts";
// Loopback fakes of code hosts (GitHub, GitLab, Bitbucket Cloud, Gitea APIs and git remotes).
export {
  type FailNextOptions,
  type FakeCodeHost,
  type FakeFailure,
  type FakeHostRequest,
  fakeRateLimit,
  startFakeCodeHost,
} from "./code-hosts/fake-code-host.ts";
export type {
  FakeChecks,
  FakeCodeHostType,
  FakePullRequest,
  FakeRepository,
  FakeReviewState,
} from "./code-hosts/fake-code-host-model.ts";
export {
  type GitHttpRequestRecord,
  type GitHttpServer,
  startGitHttpServer,
} from "./code-hosts/git-http-backend.ts";
// The offline busybox image container tests run (built from busybox-static, cached by tag).
export {
  BUSYBOX_TEST_IMAGE,
  ensureBusyboxTestImage,
  type TestContainerCli,
} from "./container/busybox-test-image.ts";
// Fake Gemini CLI and opencode honouring their codingAgent contracts, served as their releases.
export {
  type FakeGeminiRelease,
  type FakeGeminiReleaseOptions,
  fakeGeminiBundle,
  startFakeGeminiRelease,
} from "./fake-agents/fake-gemini-release.ts";
export {
  type FakeOpencodeRelease,
  fakeOpencodeScript,
  startFakeOpencodeRelease,
} from "./fake-agents/fake-opencode-release.ts";
export {
  type FakeReleaseServer,
  startFakeReleaseServer,
  tarGzArchive,
  zipArchive,
} from "./fake-agents/fake-release-server.ts";
// A fake Codex CLI honouring the codingAgent contract, served as codex release archives.
export {
  type FakeCodexRelease,
  type FakeCodexReleaseOptions,
  fakeCodexArchive,
  fakeCodexDirective,
  fakeCodexScript,
  startFakeCodexRelease,
} from "./fake-codex/fake-codex-release.ts";
// Scripted fake model server (OpenAI Responses, Chat Completions, Anthropic Messages, Gemini).
export {
  type CapturedRequest,
  defaultResponder,
  type FakeModel,
  type FakeModelApi,
  type FakeUpstream,
  modelApiOf,
  type Responder,
  renderTurn,
  type ScriptedResponse,
  startFakeModel,
  startFakeUpstream,
} from "./fake-model/fake-model-server.ts";
export {
  type CallOptions,
  DEFAULT_FAKE_USAGE,
  type FakeHttpErrorTurn,
  type FakeOutputItem,
  type FakeStreamTurn,
  type FakeTurn,
  type FakeTurnEnding,
  type FakeUsage,
  item,
  type TurnOptions,
  turn,
} from "./fake-model/fake-turn.ts";
export {
  anthropicMessagesStream,
  renderAnthropicTurn,
  UnrenderableTurnError,
} from "./fake-model/render-anthropic.ts";
export {
  chatCompletionsStream,
  renderChatCompletionsTurn,
} from "./fake-model/render-chat-completions.ts";
export {
  geminiStream,
  geminiUsageMetadata,
  renderGeminiResponse,
  renderGeminiTurn,
} from "./fake-model/render-gemini.ts";
export {
  type RenderContext,
  renderResponsesTurn,
  responsesStream,
  responsesUsage,
} from "./fake-model/render-responses.ts";
export { sseEvent } from "./fake-model/sse-event.ts";
// Temporary git repositories and the session-stream client for server tests.
export { createTempRepository, gitIn, type TempRepository } from "./git/temp-repository.ts";
// Requests with the headers fetch will not set (Host, Origin on upgrades), for the origin guard.
export {
  type RawResponse,
  rawRequest,
  tryWebSocket,
  type UpgradeOutcome,
} from "./http/raw-request.ts";
// A Kubernetes API server (Jobs, Pods, logs, Secrets, watches) whose pods run in Podman.
export type { FakeKubeletContainerCli } from "./kubernetes/fake-kubelet.ts";
export {
  type FakeKubernetes,
  type FakeKubernetesOptions,
  type FakeKubernetesRequest,
  startFakeKubernetes,
} from "./kubernetes/fake-kubernetes.ts";
export type { KindName, KubeObject } from "./kubernetes/fake-kubernetes-objects.ts";
// A PostgreSQL database of its own per test, on the server DATABASE_URL names.
export {
  createPostgresTestDatabase,
  type PostgresTestDatabase,
  testPostgresUrl,
} from "./postgres/test-database.ts";
// Spawning Deckhand services (agent, server) in tests.
export {
  eventually,
  isAlive,
  type SpawnedService,
  spawnService,
} from "./process/spawn-service.ts";
// Whether bubblewrap sandboxes work here (an error in CI, where they must).
export { type SandboxTestSetup, sandboxTestSetup } from "./sandbox/sandbox-test-setup.ts";
export { SessionStreamClient } from "./session-stream/session-stream-client.ts";
