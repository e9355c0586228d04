/** A confirmation through the dialog provider (spec 2.4) that resolves when it is answered. */
import type { DialogApi } from "naive-ui";

/** Options of {@linkcode confirmAction}. */
export interface ConfirmOptions {
  title: string;
  content: string;
  positiveText: string;
  /** A destructive action gets the error style. */
  danger?: boolean;
  /** Runs on confirmation; the dialog stays open (loading) until it settles. */
  action: () => Promise<void>;
}

export function confirmAction(dialog: DialogApi, opts: ConfirmOptions): void {
  const show = opts.danger ? dialog.error : dialog.warning;
  show({
    title: opts.title,
    content: opts.content,
    positiveText: opts.positiveText,
    negativeText: "取消",
    onPositiveClick: async () => {
      await opts.action();
    },
  });
}
