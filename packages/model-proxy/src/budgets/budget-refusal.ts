// The answer to a request whose budget is reached, in the error shape of the provider the agent
// thinks it is talking to, so its CLI shows the message and stops. 402 Payment Required rather
// than 429: agents retry a 429 with backoff (waiting does not refill a budget), while they report
// other 4xx answers with the provider's error message and give up.
import type { ModelUpstreamKind } from "@deckhand/wire";

export const BUDGET_EXCEEDED_STATUS = 402;

/** The provider-shaped error body for a refused request. */
export function budgetRefusalBody(kind: ModelUpstreamKind, message: string): unknown {
  switch (kind) {
    case "openai":
      // The OpenAI SDKs and Codex read `error.message`; `code` is Deckhand's wire code too.
      return { error: { message, type: "budget_exceeded", param: null, code: "budget_exceeded" } };
    case "anthropic":
      return { type: "error", error: { type: "budget_exceeded", message } };
    case "gemini":
      return { error: { code: BUDGET_EXCEEDED_STATUS, message, status: "RESOURCE_EXHAUSTED" } };
  }
}

export function budgetRefusalResponse(kind: ModelUpstreamKind, message: string): Response {
  return new Response(JSON.stringify(budgetRefusalBody(kind, message)), {
    status: BUDGET_EXCEEDED_STATUS,
    headers: { "content-type": "application/json" },
  });
}
