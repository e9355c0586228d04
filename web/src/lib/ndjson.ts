/** Splits a text stream into its non-empty lines (NDJSON). */
export async function* splitLines(text: ReadableStream<string>): AsyncGenerator<string> {
  const reader = text.getReader();
  let rest = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += value;
      let nl = rest.indexOf("\n");
      while (nl >= 0) {
        const line = rest.slice(0, nl).trim();
        rest = rest.slice(nl + 1);
        if (line !== "") yield line;
        nl = rest.indexOf("\n");
      }
    }
    const last = rest.trim();
    if (last !== "") yield last;
  } finally {
    reader.releaseLock();
  }
}
