import { type ReactNode, useEffect, useRef } from "react";

export interface ConfirmRequest {
  title: string;
  body: ReactNode;
  /** The confirming button's words, with the count: "Close 2 pull requests". */
  confirm: string;
  danger?: boolean;
  onConfirm: () => void;
}

/**
 * Asks before an action that reaches many things at once (or cannot be undone), saying how
 * many: a modal <dialog>, so focus stays in it, Escape cancels, and the browser gives focus
 * back to the button that opened it. The confirming button has the focus, so Enter confirms.
 */
export function ConfirmDialog({
  request,
  onClose,
}: {
  request: ConfirmRequest | null;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const confirm = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (request && !element.open) {
      element.showModal();
      confirm.current?.focus();
    } else if (!request && element.open) {
      element.close();
    }
  }, [request]);
  return (
    <dialog
      ref={dialog}
      className="confirm-dialog"
      aria-labelledby="confirm-dialog-title"
      onClose={onClose}
    >
      {request && (
        <form
          method="dialog"
          onSubmit={(event) => {
            event.preventDefault();
            request.onConfirm();
            onClose();
          }}
        >
          <h2 id="confirm-dialog-title">{request.title}</h2>
          <div>{request.body}</div>
          <div className="actions">
            <button ref={confirm} type="submit" className={request.danger ? "danger" : "primary"}>
              {request.confirm}
            </button>
            <button type="button" onClick={onClose}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
}
