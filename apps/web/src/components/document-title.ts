import { useEffect } from "react";

const PRODUCT = "Deckhand";
const ICON = "/favicon.svg";
/** The same mark with a dot: something waits for the person. */
const ATTENTION_ICON = "/favicon-attention.svg";

function iconLink(): HTMLLinkElement {
  let link = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
  if (!link) {
    link = document.createElement("link");
    link.rel = "icon";
    link.type = "image/svg+xml";
    document.head.append(link);
  }
  return link;
}

/** The tab's title for a screen: "what · Deckhand", and "(Needs input) what · Deckhand". */
export function documentTitle(what: string | null, attention?: string | null): string {
  const base = what ? `${what} · ${PRODUCT}` : PRODUCT;
  return attention ? `(${attention}) ${base}` : base;
}

/**
 * Names the screen in the tab's title, and when something waits for the person (a permission
 * request, say) says so first and marks the favicon, so a background tab shows it.
 */
export function useDocumentTitle(what: string | null, attention?: string | null): void {
  useEffect(() => {
    document.title = documentTitle(what, attention);
    iconLink().href = attention ? ATTENTION_ICON : ICON;
  }, [what, attention]);
  useEffect(
    () => () => {
      document.title = PRODUCT;
      iconLink().href = ICON;
    },
    [],
  );
}
