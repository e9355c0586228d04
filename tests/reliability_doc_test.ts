// docs/RELIABILITY.md (issue 35): its fault table is exactly what the committed summary
// docs/reliability_summary.json generates (scripts/reliability_tables.ts), every table in it is
// valid Markdown (a separator row, every row with the header's column count), and the summary
// machinery (tests/helpers/fault_counts.ts) records, counts and fails as the fault tests rely on.
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  collect,
  DOC,
  generateDoc,
  merge,
  readSummary,
  renderTables,
  ROWS,
  type Summary,
} from "../scripts/reliability_tables.ts";
import {
  countFaults,
  type FaultRow,
  reportFaults,
  scaledMs,
  settle,
  SUMMARY_DIR_ENV,
} from "./helpers/fault_counts.ts";

/** The cells of a Markdown table row: split on `|` not escaped with a backslash. */
function cells(line: string): string[] {
  const inner = line.trim().replace(/^\|/, "").replace(/(?<!\\)\|$/, "");
  return inner.split(/(?<!\\)\|/).map((c) => c.trim());
}

/** Every table of `md`: its lines (1-based line number of the header first). */
function tables(md: string): { at: number; lines: string[] }[] {
  const out: { at: number; lines: string[] }[] = [];
  let cur: { at: number; lines: string[] } | null = null;
  let fence = false;
  md.split("\n").forEach((line, i) => {
    if (/^\s*```/.test(line)) fence = !fence;
    if (!fence && /^\s*\|/.test(line)) {
      if (cur === null) out.push(cur = { at: i + 1, lines: [] });
      cur.lines.push(line);
    } else cur = null;
  });
  return out;
}

/** Problems of the tables of `md`, one string each (empty: valid). */
function tableProblems(md: string): string[] {
  const problems: string[] = [];
  for (const t of tables(md)) {
    const width = cells(t.lines[0]!).length;
    const sep = t.lines[1] === undefined ? [] : cells(t.lines[1]);
    if (sep.length !== width || !sep.every((c) => /^:?-{3,}:?$/.test(c))) {
      problems.push(`line ${t.at + 1}: not a separator row for ${width} columns`);
    }
    t.lines.slice(2).forEach((l, i) => {
      const n = cells(l).length;
      if (n !== width) problems.push(`line ${t.at + 2 + i}: ${n} cells, the header has ${width}`);
      if (cells(l).every((c) => /^:?-+:?$/.test(c))) {
        problems.push(`line ${t.at + 2 + i}: a second separator row`);
      }
    });
  }
  return problems;
}

Deno.test("docs/RELIABILITY.md's fault table is what docs/reliability_summary.json generates", async () => {
  const doc = await Deno.readTextFile(DOC);
  const want = await generateDoc(doc, readSummary());
  // permissions: not the shipped command: the message names the doc generator's command.
  assert.equal(
    doc,
    want,
    "regenerate it: deno run -A scripts/reliability_tables.ts write",
  );
});

Deno.test("every table of docs/RELIABILITY.md has a separator row and the header's column count", async () => {
  const doc = await Deno.readTextFile(DOC);
  assert.ok(tables(doc).length >= 3, "the fault table, its runs and the crash points");
  assert.deepEqual(tableProblems(doc), []);
});

Deno.test("the table check finds a broken separator row and a row with a cell too many", () => {
  const bad = [
    "| a | b |",
    "| --- | --- |",
    "| --- | --- |",
    "| 1 | 2 | 3 |",
    "| `x \\| y` | 2 |",
  ].join("\n");
  assert.deepEqual(tableProblems(bad), [
    "line 3: a second separator row",
    "line 4: 3 cells, the header has 2",
  ]);
  assert.deepEqual(tableProblems("| a | b |\n| - | --- |\n"), [
    "line 2: not a separator row for 2 columns",
  ]);
});

Deno.test("every fault table row cites a run of the summary, and every summary row is shown", () => {
  const s = readSummary();
  const runs = new Set(s.runs.map((r) => r.id));
  for (const r of s.rows) assert.ok(runs.has(r.run), `${r.key}: run ${r.run} is listed`);
  const shown = new Set(ROWS.flatMap((d) => d.keys));
  assert.deepEqual(s.rows.map((r) => r.key).filter((k) => !shown.has(k)), []);
});

const row = (key: string, lost = 0): FaultRow => ({
  key,
  fault: key,
  messages: 10,
  lost,
  lost_ids: lost ? ["m3"] : [],
  duplicated: 0,
  redelivered: 1,
  crashes: 0,
  ms: 5,
  figures: { kills: 1 },
  at: "2026-12-03T10:00:00.000Z",
  load_per_core: 1,
});

Deno.test("a summary without a row of the table is refused, and merge replaces rows by key", () => {
  const s: Summary = {
    runs: [{ id: "a", date: "2026-12-03", note: "", max_load_per_core: 1 }],
    rows: [],
  };
  assert.throws(() => renderTables(s), /the summary has no row weak-network\/keep/);
  const full = readSummary();
  const again: Summary = {
    runs: [{ id: "z", date: "2026-12-04", note: "n", max_load_per_core: 2 }],
    rows: [{ ...row("packet-loss", 0), run: "z" }],
  };
  const m = merge(full, again);
  assert.equal(m.rows.length, full.rows.length);
  assert.equal(m.rows.find((r) => r.key === "packet-loss")!.run, "z");
  assert.match(renderTables(m), /\| z \| 2026-12-04 \| 2\.0 \| n \|/);
});

Deno.test("reportFaults prints and records the row, then fails with lost=N and the ids", async () => {
  const dir = await Deno.makeTempDir();
  const before = Deno.env.get(SUMMARY_DIR_ENV);
  Deno.env.set(SUMMARY_DIR_ENV, dir);
  try {
    const { at: _at, load_per_core: _l, ...ok } = row("t/ok");
    reportFaults(ok);
    const { at: _a2, load_per_core: _l2, ...lost } = row("t/lost", 1);
    assert.throws(() => reportFaults(lost), /^Error: t\/lost: lost=1 \(ids m3\), duplicated=0/);
    const s = collect(dir, "r", "note");
    assert.deepEqual(s.rows.map((r) => [r.key, r.lost, r.run]), [["t/lost", 1, "r"], [
      "t/ok",
      0,
      "r",
    ]]);
  } finally {
    if (before === undefined) Deno.env.delete(SUMMARY_DIR_ENV);
    else Deno.env.set(SUMMARY_DIR_ENV, before);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("countFaults counts missing ids per receiver and sums duplicates", () => {
  const ids = ["a", "b", "c"];
  const c = countFaults(ids, [
    { has: (id) => id !== "b", duplicates: 1, redelivered: 2 },
    { has: () => true, duplicates: 0, redelivered: null },
  ]);
  assert.deepEqual(c, { messages: 6, lost: 1, lost_ids: ["b"], duplicated: 1, redelivered: null });
});

/** A hand-driven event source for settle. */
function source() {
  const fns = new Set<() => void>();
  return {
    fire: () => fns.forEach((f) => f()),
    subscribe: (f: () => void) => {
      fns.add(f);
      return () => fns.delete(f);
    },
  };
}

Deno.test("settle ends at its bound without throwing, and counts events in the quiet window", async () => {
  const idle = source();
  const timedOut = await settle({
    done: () => false,
    subscribe: idle.subscribe,
    timeoutMs: 50,
    quietMs: 10,
  });
  assert.equal(timedOut.done, false);

  const ev = source();
  let n = 0;
  const p = settle({ done: () => n >= 2, subscribe: ev.subscribe, timeoutMs: 5000, quietMs: 80 });
  n = 1;
  ev.fire();
  n = 2;
  ev.fire(); // done: the quiet window opens
  await new Promise((r) => setTimeout(r, 20));
  n = 3;
  ev.fire(); // a late event: counted, the window reopens
  const s = await p;
  assert.deepEqual([s.done, s.late], [true, 1]);
  assert.ok(s.ms >= 100, `the window reopened (${s.ms} ms)`);
});

Deno.test("settle gives up early when nothing happens for stallMs", async () => {
  const ev = source();
  const p = settle({
    done: () => false,
    subscribe: ev.subscribe,
    timeoutMs: 5000,
    quietMs: 10,
    stallMs: 60,
  });
  await new Promise((r) => setTimeout(r, 30));
  ev.fire(); // progress: the stall window restarts
  const s = await p;
  assert.equal(s.done, false);
  assert.ok(s.ms >= 80 && s.ms < 2000, `${s.ms} ms`);
});

Deno.test("scaledMs grows with the work and stays under its cap", () => {
  const small = scaledMs(1000);
  assert.ok(small >= 1000 && small <= 4000, `${small}`);
  assert.ok(scaledMs(1000, { units: 100, perUnitMs: 10 }) >= 2000);
  assert.equal(scaledMs(1_000_000, { capMs: 5000 }), 5000);
});

Deno.test("collect reads every .jsonl file of a directory as one run", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "1.jsonl"), `${JSON.stringify(row("x/1"))}\n`);
    await Deno.writeTextFile(
      join(dir, "2.jsonl"),
      `${JSON.stringify({ ...row("x/2"), load_per_core: 3 })}\n`,
    );
    await Deno.writeTextFile(join(dir, "other.txt"), "not a row");
    const s = collect(dir, "r9", "what");
    assert.deepEqual(s.runs, [{
      id: "r9",
      date: "2026-12-03",
      note: "what",
      max_load_per_core: 3,
    }]);
    assert.deepEqual(s.rows.map((r) => r.key), ["x/1", "x/2"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
