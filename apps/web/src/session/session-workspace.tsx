import { type ReactNode, useSyncExternalStore } from "react";
import { Group, Panel, Separator, useDefaultLayout } from "react-resizable-panels";

/** From this width the chat and the side pane sit side by side; below it they are stacked. */
const WIDE = "(min-width: 1024px)";

function subscribeWide(onChange: () => void): () => void {
  const query = window.matchMedia(WIDE);
  query.addEventListener("change", onChange);
  return () => query.removeEventListener("change", onChange);
}

/** Whether the window is wide enough for panes side by side, following its resizes. */
export function useWide(): boolean {
  return useSyncExternalStore(
    subscribeWide,
    () => window.matchMedia(WIDE).matches,
    () => true,
  );
}

/**
 * The session screen's two panes, resizable: side by side on a wide window (the chat on the
 * left), stacked on a narrow one (the chat on top). The same tree either way, so turning a
 * tablet or narrowing a window keeps the chat's draft and scroll. Each pane scrolls on its
 * own; the split is remembered in localStorage.
 */
export function SessionWorkspace({ chat, side }: { chat: ReactNode; side: ReactNode }) {
  const wide = useWide();
  const orientation = wide ? "horizontal" : "vertical";
  const layout = useDefaultLayout({
    id: "deckhand.session-layout",
    storage: localStorage,
    panelIds: ["chat", "side"],
  });
  return (
    <Group
      className="session-workspace"
      orientation={orientation}
      defaultLayout={layout.defaultLayout}
      onLayoutChanged={layout.onLayoutChanged}
    >
      <Panel id="chat" className="pane" defaultSize={wide ? "55%" : "62%"} minSize="28%">
        {chat}
      </Panel>
      <Separator className="pane-separator" aria-label="Resize the chat and the side pane" />
      <Panel id="side" className="pane" defaultSize={wide ? "45%" : "38%"} minSize="15%">
        {side}
      </Panel>
    </Group>
  );
}
