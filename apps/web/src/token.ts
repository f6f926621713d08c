/** Where the admin (or API) token lives: this tab only, gone when the tab closes. */
const TOKEN_KEY = "deckhand.token";

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}
