/**
 * Which processes a request may see: `null` for a request without a chat id (it sees every
 * process), otherwise the chat ids it acts for — its own chat and that chat's ancestors.
 */
export type ChatScope = readonly string[] | null;

/** UUIDs compare case-insensitively; one spelling keeps a chat from missing its own processes. */
export function normalizeChatId(chatId: string): string {
  return chatId.toLowerCase();
}

/** The scope of a request carrying `chatId` (or none) and the ancestor chats it may also see. */
export function chatScope(
  chatId: string | null | undefined,
  ancestorChatIds: readonly string[] = [],
): ChatScope {
  if (chatId === null || chatId === undefined) return null;
  return [...new Set([chatId, ...ancestorChatIds].map(normalizeChatId))];
}

/**
 * A process started without a chat id belongs to nobody in particular, so every scope sees it;
 * one started for a chat is visible only to scopes that include that chat.
 */
export function isVisibleTo(scope: ChatScope, processChatId: string | null): boolean {
  if (scope === null || processChatId === null) return true;
  return scope.some((chatId) => normalizeChatId(chatId) === processChatId);
}
