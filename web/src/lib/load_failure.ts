/** A page whose code could not be fetched (spec 2.4: failures are shown, never silent). */
import { ref } from "vue";

export { isChunkLoadError } from "./chunk_error.ts";

/** The address that failed to open, and why; null when the last navigation worked. */
export const loadFailure = ref<{ path: string; message: string } | null>(null);
