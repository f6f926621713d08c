import { useCallback, useEffect, useRef, useState } from "react";

/** Within this many pixels of the bottom the person is "at the latest output". */
const NEAR_BOTTOM_PX = 48;
/** A scroll this soon after a wheel, key, touch or press on the log is the person's own. */
const INTENT_MS = 1_000;

function nearBottom(element: HTMLElement): boolean {
  return element.scrollHeight - element.scrollTop - element.clientHeight <= NEAR_BOTTOM_PX;
}

export interface FollowScroll {
  /** Goes on the scrolling element (the chat's message log). */
  ref: (element: HTMLElement | null) => void;
  /** False once the person scrolled up: new output then leaves the view where it is. */
  following: boolean;
  /** Scrolls to the newest output and follows it again. */
  jumpToLatest: () => void;
}

/**
 * Keeps a scrolling element at its bottom while its content grows, as a terminal or a chat
 * does, unless the person scrolled up to read: then it stays put until they come back to the
 * bottom (or ask to jump there). Growth is seen with a ResizeObserver on the content and a
 * MutationObserver for new children, so a streaming answer is followed once per layout, not
 * once per delta. Only a scroll the person made stops the following: one the browser made (a
 * resized window reflowing the log) is undone.
 */
export function useFollowScroll(): FollowScroll {
  const [element, setElement] = useState<HTMLElement | null>(null);
  const [following, setFollowing] = useState(true);
  const followingRef = useRef(true);

  const setFollow = useCallback((value: boolean) => {
    followingRef.current = value;
    setFollowing(value);
  }, []);

  useEffect(() => {
    if (!element) return;
    let lastIntent = 0;
    const toBottom = () => {
      element.scrollTop = element.scrollHeight;
    };
    const onIntent = () => {
      lastIntent = Date.now();
    };
    const onScroll = () => {
      if (nearBottom(element)) {
        if (!followingRef.current) setFollow(true);
      } else if (Date.now() - lastIntent < INTENT_MS) {
        if (followingRef.current) setFollow(false);
      } else if (followingRef.current) {
        toBottom();
      }
    };
    const follow = () => {
      if (followingRef.current) toBottom();
    };
    const resizes = new ResizeObserver(follow);
    const watchChildren = () => {
      resizes.disconnect();
      resizes.observe(element);
      for (const child of element.children) resizes.observe(child);
    };
    const mutations = new MutationObserver(() => {
      watchChildren();
      follow();
    });
    watchChildren();
    mutations.observe(element, { childList: true });
    const intents = ["wheel", "touchmove", "keydown", "pointerdown"] as const;
    for (const type of intents) element.addEventListener(type, onIntent, { passive: true });
    element.addEventListener("scroll", onScroll, { passive: true });
    follow();
    return () => {
      resizes.disconnect();
      mutations.disconnect();
      for (const type of intents) element.removeEventListener(type, onIntent);
      element.removeEventListener("scroll", onScroll);
    };
  }, [element, setFollow]);

  const jumpToLatest = useCallback(() => {
    if (!element) return;
    setFollow(true);
    element.scrollTop = element.scrollHeight;
  }, [element, setFollow]);

  return { ref: setElement, following, jumpToLatest };
}
