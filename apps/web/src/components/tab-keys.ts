import type { KeyboardEvent } from "react";

/**
 * Arrow keys (and Home, End) move between the tabs of a tablist and select the one reached, as
 * the ARIA tabs pattern has it; Tab then goes on into the panel.
 */
export function onTabListKeyDown(event: KeyboardEvent<HTMLElement>): void {
  const tabs = [...event.currentTarget.querySelectorAll<HTMLElement>('[role="tab"]')];
  const index = tabs.indexOf(document.activeElement as HTMLElement);
  if (index === -1) return;
  const next =
    event.key === "ArrowRight"
      ? (index + 1) % tabs.length
      : event.key === "ArrowLeft"
        ? (index - 1 + tabs.length) % tabs.length
        : event.key === "Home"
          ? 0
          : event.key === "End"
            ? tabs.length - 1
            : -1;
  if (next === -1) return;
  event.preventDefault();
  tabs[next]!.focus();
  tabs[next]!.click();
}
