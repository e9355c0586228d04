/**
 * Whether `err` is a failed fetch of a code chunk: the browsers' wording for a failed dynamic
 * import, or Vite's failed preload of a chunk's CSS.
 */
export function isChunkLoadError(err: unknown): boolean {
  const text = err instanceof Error ? `${err.name} ${err.message}` : String(err);
  return /dynamically imported module|Importing a module script failed|Unable to preload CSS|Failed to fetch/i
    .test(text);
}
