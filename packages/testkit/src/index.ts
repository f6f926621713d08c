// Scripted fake model server (OpenAI Responses, Chat Completions, Anthropic Messages).
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
  type RenderContext,
  renderResponsesTurn,
  responsesStream,
  responsesUsage,
} from "./fake-model/render-responses.ts";
export { sseEvent } from "./fake-model/sse-event.ts";
// Spawning Deckhand services (agent, server) in tests.
export {
  eventually,
  isAlive,
  type SpawnedService,
  spawnService,
} from "./process/spawn-service.ts";
