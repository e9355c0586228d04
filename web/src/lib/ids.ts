/** Endpoint ids typed or pasted as a list: separated by spaces, commas or line breaks. */
export function parseIds(text: string): string[] {
  const seen = new Set<string>();
  for (const part of text.split(/[\s,，、;；]+/)) {
    if (part !== "") seen.add(part);
  }
  return [...seen];
}
