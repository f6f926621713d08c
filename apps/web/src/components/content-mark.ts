import { useEffect, useRef } from "react";

/** The mark a route sets as its navigation starts (a link followed, or the page loaded). */
export const ROUTE_MARK = "deckhand:route";
/** The mark a screen sets once its first content is on screen. */
export const CONTENT_MARK = "deckhand:first-content";

/**
 * Marks, once per screen, the moment its first content is drawn (its data loaded and rendered),
 * on the frame after the render: the browser tests measure route-to-content from it.
 */
export function useContentMark(ready: boolean, screen: string): void {
  const marked = useRef(false);
  useEffect(() => {
    if (!ready || marked.current) return;
    marked.current = true;
    requestAnimationFrame(() => performance.mark(CONTENT_MARK, { detail: screen }));
  }, [ready, screen]);
}
