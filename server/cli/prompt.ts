import type { Io } from "./commands.ts";

async function readLine(echo: boolean): Promise<string | null> {
  const stdin = Deno.stdin;
  const raw = !echo && stdin.isTerminal();
  if (raw) stdin.setRaw(true);
  try {
    const bytes: number[] = [];
    const buf = new Uint8Array(1);
    while (true) {
      const n = await stdin.read(buf);
      if (n === null) return bytes.length ? new TextDecoder().decode(new Uint8Array(bytes)) : null;
      const b = buf[0];
      if (b === 0x0a || b === 0x0d) break;
      if (b === 0x03) return null; // Ctrl-C in raw mode
      if (b === 0x7f || b === 0x08) bytes.pop();
      else bytes.push(b);
    }
    return new TextDecoder().decode(new Uint8Array(bytes));
  } finally {
    if (raw) {
      stdin.setRaw(false);
      await Deno.stderr.write(new TextEncoder().encode("\n"));
    }
  }
}

/**
 * Reads a new password: twice without echo on a terminal, or the first line of piped stdin.
 * Returns null (after telling the user why) when no usable password was given.
 */
export async function readNewPassword(io: Io): Promise<string | null> {
  if (!Deno.stdin.isTerminal()) {
    const line = await readLine(true);
    if (!line) io.err("No password on standard input");
    return line || null;
  }
  await Deno.stderr.write(new TextEncoder().encode("New admin password: "));
  const first = await readLine(false);
  await Deno.stderr.write(new TextEncoder().encode("Repeat it: "));
  const second = await readLine(false);
  if (first === null || second === null) return null;
  if (first !== second) {
    io.err("The two passwords differ");
    return null;
  }
  return first;
}
