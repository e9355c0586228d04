/** Shared layout values, so every form and table looks the same (spec 2.4). */
import { computed, ref } from "vue";

/** The one label width of left-labelled forms. */
export const LABEL_WIDTH = 120;

/** Below this width the console switches to its phone layout (menu drawer, labels on top). */
export const PHONE_QUERY = "(max-width: 767px)";

const media = typeof globalThis.matchMedia === "function"
  ? globalThis.matchMedia(PHONE_QUERY)
  : null;

/** Whether the window is phone-sized; follows resizes and rotations. */
export const isPhone = ref(media?.matches ?? false);
media?.addEventListener("change", (e) => (isPhone.value = e.matches));

/**
 * The label props of a form: on the left with {@linkcode LABEL_WIDTH}, or on top on a phone.
 * Use as `<n-form v-bind="formLabels">`.
 */
export const formLabels = computed(() =>
  isPhone.value
    ? { labelPlacement: "top" as const, labelWidth: "auto" as const }
    : { labelPlacement: "left" as const, labelWidth: LABEL_WIDTH }
);

/** The columns of an `n-descriptions`: one on a phone, so values get the whole width. */
export function descColumns(wide: number): number {
  return isPhone.value ? 1 : wide;
}

/** The label style of an `n-descriptions`: `width` px, narrower on a phone. */
export function descLabel(width: number): Record<string, string> {
  return { width: `${isPhone.value ? Math.min(width, 120) : width}px` };
}
