// The shell command blocks of a Markdown page (issue 27: docs that run), split into commands
// with the output the page shows for them, and the `not run` markers that exempt a block or
// some of its commands:
//
//   <!-- not run: needs Docker -->                      the whole next block
//   <!-- not run `docker`: needs Docker -->             its commands that start with `docker`
//
// A marker is one HTML comment line directly before the block's fence (blank lines between are
// allowed, so are several markers). Every marker must give a reason.

/** The fence languages that hold shell commands. */
export const SHELL_LANGS: ReadonlySet<string> = new Set(["sh", "bash", "shell", "console"]);

/** One command of a block, continuation lines included. */
export interface DocCommand {
  /** The command as written, without its trailing comment (`\` continuations kept). */
  text: string;
  /** 1-based line in the page. */
  line: number;
  /**
   * The output the page shows: in `console` blocks the lines after `$ command`, elsewhere a
   * comment that is JSON (`# {"ok":true}` at the end of the line or on the next lines). `…`
   * stands for anything.
   */
  expected: string[];
  /** The reason of the marker that exempts this command, or null when it is to be run. */
  notRun: string | null;
}

/** One fenced shell block. */
export interface DocBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  /** The reason of a whole-block marker, or null. */
  notRun: string | null;
  commands: DocCommand[];
}

/** The blocks of a page plus what is wrong with its markers (empty when all is well). */
export interface ParsedDoc {
  blocks: DocBlock[];
  problems: string[];
}

const MARKER = /^\s*<!--\s*not run(?:\s+`([^`]+)`)?\s*:\s*(.*?)\s*-->\s*$/;
const FENCE = /^(\s*)(`{3,})\s*([\w-]*)\s*$/;

interface Marker {
  line: number;
  prefix: string | null;
  reason: string;
}

/** Parses `markdown` (the text of `file`) into its shell blocks. */
export function parseDoc(file: string, markdown: string): ParsedDoc {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  const problems: string[] = [];
  let pending: Marker[] = [];
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    const where = `${file}:${i + 1}`;
    if (/<!--\s*not run/.test(raw)) {
      const m = MARKER.exec(raw);
      if (m === null || m[2] === "") {
        problems.push(`${where}: a "not run" marker needs a reason: <!-- not run: why -->`);
      } else pending.push({ line: i + 1, prefix: m[1] ?? null, reason: m[2] });
      continue;
    }
    if (raw.trim() === "") continue;
    const fence = FENCE.exec(raw);
    if (fence === null) {
      for (const m of pending) {
        problems.push(`${file}:${m.line}: marker not directly before a block`);
      }
      pending = [];
      continue;
    }
    const [, indent, ticks, lang] = fence;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = FENCE.exec(lines[j]);
      if (close !== null && close[3] === "" && close[2].length >= ticks.length) break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j].trimStart());
    }
    const markers = pending;
    pending = [];
    const fenceLine = i + 1;
    i = j;
    if (!SHELL_LANGS.has(lang)) {
      for (const m of markers) {
        problems.push(`${file}:${m.line}: marker before a \`${lang}\` block, which is not run`);
      }
      continue;
    }
    blocks.push(toBlock(file, lang, fenceLine, body, markers, problems));
  }
  for (const m of pending) problems.push(`${file}:${m.line}: marker not directly before a block`);
  return { blocks, problems };
}

function toBlock(
  file: string,
  lang: string,
  fenceLine: number,
  body: string[],
  markers: Marker[],
  problems: string[],
): DocBlock {
  const commands = lang === "console"
    ? consoleCommands(body, fenceLine)
    : shCommands(body, fenceLine);
  const whole = markers.find((m) => m.prefix === null);
  for (const m of markers) {
    if (m.prefix === null) continue;
    const hits = commands.filter((c) => c.text.startsWith(m.prefix!));
    if (hits.length === 0) {
      problems.push(`${file}:${m.line}: marker for \`${m.prefix}\`, which no command starts with`);
    }
    for (const c of hits) c.notRun = m.reason;
  }
  if (commands.length === 0) problems.push(`${file}:${fenceLine}: a shell block without a command`);
  return { file, line: fenceLine, lang, notRun: whole?.reason ?? null, commands };
}

/** `sh`-style blocks: commands with `\` continuations, `#` comments, JSON comments as output. */
function shCommands(body: string[], fenceLine: number): DocCommand[] {
  const commands: DocCommand[] = [];
  for (let k = 0; k < body.length; k++) {
    const line = body[k];
    const trimmed = line.trim();
    if (trimmed === "") continue;
    if (trimmed.startsWith("#")) {
      const shown = trimmed.slice(1).trim();
      const last = commands.at(-1);
      if (last !== undefined && /^[{[]/.test(shown)) last.expected.push(shown);
      continue;
    }
    const parts = [line];
    while (parts.at(-1)!.endsWith("\\") && k + 1 < body.length) parts.push(body[++k]);
    const { code, comment } = splitComment(parts.join("\n"));
    const expected = comment !== null && /^[{[]/.test(comment) ? [comment] : [];
    commands.push({
      text: code.trim(),
      line: fenceLine + 1 + k - (parts.length - 1),
      expected,
      notRun: null,
    });
  }
  return commands;
}

/** `console` blocks: `$ command` lines, and the lines after each as its output. */
function consoleCommands(body: string[], fenceLine: number): DocCommand[] {
  const commands: DocCommand[] = [];
  for (let k = 0; k < body.length; k++) {
    const line = body[k];
    if (line.startsWith("$ ")) {
      const parts = [line.slice(2)];
      while (parts.at(-1)!.endsWith("\\") && k + 1 < body.length) parts.push(body[++k]);
      const text = splitComment(parts.join("\n")).code.trim();
      commands.push({
        text,
        line: fenceLine + 1 + k - (parts.length - 1),
        expected: [],
        notRun: null,
      });
    } else if (line.trim() !== "" && commands.length > 0) commands.at(-1)!.expected.push(line);
  }
  return commands;
}

/** Splits a shell line at a `#` that starts a comment (after a blank, outside quotes). */
export function splitComment(text: string): { code: string; comment: string | null } {
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote !== null) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"') i++;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "\\") i++;
    else if (c === "#" && (i === 0 || /\s/.test(text[i - 1]))) {
      return { code: text.slice(0, i).trimEnd(), comment: text.slice(i + 1).trim() };
    }
  }
  return { code: text, comment: null };
}

/** Whether `actual` is what the page shows: the same text, with `…` standing for anything. */
export function matchesShown(shown: string, actual: string): boolean {
  const pattern = shown.split("…").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*");
  return new RegExp(`^${pattern}$`, "s").test(actual);
}
