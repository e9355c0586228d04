import assert from "node:assert/strict";
import { matchesShown, parseDoc, splitComment } from "./helpers/doc_blocks.ts";

const page = (...lines: string[]) => lines.join("\n") + "\n";

Deno.test("parseDoc() splits a sh block into commands with continuations and shown output", () => {
  const { blocks, problems } = parseDoc(
    "x.md",
    page(
      "# T",
      "",
      "```sh",
      'curl -s http://h/healthz   # {"ok":true}',
      "curl -s -X POST http://h/send \\",
      '  -d \'{"a":"# not a comment"}\'',
      '# {"ok":true,"data":{}}',
      "# a plain comment",
      "ls  # files",
      "```",
      "",
      "```ts",
      "const x = 1;",
      "```",
    ),
  );
  assert.deepEqual(problems, []);
  assert.equal(blocks.length, 1);
  assert.equal(blocks[0].line, 3);
  assert.deepEqual(blocks[0].commands.map((c) => [c.line, c.text, c.expected]), [
    [4, "curl -s http://h/healthz", ['{"ok":true}']],
    [5, 'curl -s -X POST http://h/send \\\n  -d \'{"a":"# not a comment"}\'', [
      '{"ok":true,"data":{}}',
    ]],
    [9, "ls", []],
  ]);
});

Deno.test("parseDoc() reads console blocks as $ commands followed by their output", () => {
  const { blocks } = parseDoc(
    "x.md",
    page("  ```console", "  $ ./nixmsg version", "  nixmsg 0.1.0", "  ```"),
  );
  assert.deepEqual(blocks[0].commands.map((c) => [c.text, c.expected]), [
    ["./nixmsg version", ["nixmsg 0.1.0"]],
  ]);
});

Deno.test("parseDoc() applies block and command markers and keeps their reasons", () => {
  const { blocks, problems } = parseDoc(
    "x.md",
    page(
      "<!-- not run: needs Docker -->",
      "",
      "```sh",
      "docker compose up -d",
      "```",
      "<!-- not run `docker`: needs Docker -->",
      "<!-- not run `sysctl -w`: changes the kernel -->",
      "```bash",
      "./nixmsg backup --out x.db",
      "docker compose exec nixmsg /nixmsg backup",
      "sysctl -w a=1",
      "```",
    ),
  );
  assert.deepEqual(problems, []);
  assert.equal(blocks[0].notRun, "needs Docker");
  assert.equal(blocks[1].notRun, null);
  assert.deepEqual(blocks[1].commands.map((c) => c.notRun), [
    null,
    "needs Docker",
    "changes the kernel",
  ]);
});

Deno.test("parseDoc() reports markers without a reason, stale markers and empty blocks", () => {
  const { problems } = parseDoc(
    "x.md",
    page(
      "<!-- not run -->",
      "```sh",
      "ls",
      "```",
      "<!-- not run: -->",
      "```sh",
      "ls",
      "```",
      "<!-- not run `docker`: needs Docker -->",
      "```sh",
      "ls",
      "```",
      "<!-- not run: floating -->",
      "Some text.",
      "<!-- not run: before yaml -->",
      "```yaml",
      "a: 1",
      "```",
      "```sh",
      "# only a comment",
      "```",
    ),
  );
  assert.deepEqual(problems, [
    'x.md:1: a "not run" marker needs a reason: <!-- not run: why -->',
    'x.md:5: a "not run" marker needs a reason: <!-- not run: why -->',
    "x.md:9: marker for `docker`, which no command starts with",
    "x.md:13: marker not directly before a block",
    "x.md:15: marker before a `yaml` block, which is not run",
    "x.md:19: a shell block without a command",
  ]);
});

Deno.test("splitComment() ignores # inside quotes and words", () => {
  assert.deepEqual(splitComment(`grep '"a # b"' f  # why`), {
    code: `grep '"a # b"' f`,
    comment: "why",
  });
  assert.deepEqual(splitComment("echo a#b"), { code: "echo a#b", comment: null });
});

Deno.test("matchesShown() takes … for anything and everything else literally", () => {
  assert.ok(matchesShown('{"id":"01…","n":…}', '{"id":"01a2b","n":17}'));
  assert.ok(!matchesShown('{"id":"01…"}', '{"id":"02a"}'));
  assert.ok(!matchesShown('{"ok":true}', '{"ok":true,"x":1}'));
  assert.ok(matchesShown("a.b", "a.b"));
  assert.ok(!matchesShown("a.b", "axb"));
});
