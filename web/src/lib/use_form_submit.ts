/**
 * The submit state every console form shares: validate the bound `n-form`, set `busy` while the
 * request runs, and show a failure in the form's error alert.
 */
import { type Ref, ref, useTemplateRef } from "vue";
import type { FormInst } from "naive-ui";
import { describeError } from "./errors.ts";

export interface FormSubmit {
  busy: Ref<boolean>;
  error: Ref<string>;
  /** Validates the form, then runs `action`; a rejection becomes `error`. */
  run(action: () => Promise<void>): Promise<void>;
}

export interface FormSubmitOptions {
  /** The template ref of the `n-form` to validate (default "formRef"); unbound means no check. */
  form?: string;
  /** Clear the previous error when a new attempt starts (default true). */
  clearError?: boolean;
  /** Turns a failure into the message to show; `null` leaves `error` as it is. */
  describe?: (err: unknown) => string | null | Promise<string | null>;
}

export function useFormSubmit(options: FormSubmitOptions = {}): FormSubmit {
  const { form = "formRef", clearError = true, describe = describeError } = options;
  const formRef = useTemplateRef<FormInst>(form);
  const busy = ref(false);
  const error = ref("");

  async function run(action: () => Promise<void>): Promise<void> {
    try {
      await formRef.value?.validate();
    } catch {
      // The fields now show what is wrong; an alert about an earlier attempt would mislead.
      if (clearError) error.value = "";
      return;
    }
    busy.value = true;
    if (clearError) error.value = "";
    try {
      await action();
    } catch (err) {
      const problem = await describe(err);
      if (problem !== null) error.value = problem;
    } finally {
      busy.value = false;
    }
  }

  return { busy, error, run };
}
