import assert from "node:assert/strict";

const GUARD = new URL("./crash_guard.ts", import.meta.url).href;
const LOG = new URL("../log/log.ts", import.meta.url).href;

/** Runs `body` in a fresh Deno process, with or without the guard installed first. */
async function runChild(guarded: boolean, body: string) {
  const script = `
    import { installCrashGuard } from "${GUARD}";
    import { Logger } from "${LOG}";
    if (${guarded}) installCrashGuard(new Logger("info"));
    ${body}
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n").filter((l) => l !== "");
  return { code: out.code, lines };
}

const THROWING_PEER = `
  import { EventEmitter } from "node:events";
  setTimeout(() => new EventEmitter().emit("error", new Error("broken peer")), 0);
  setTimeout(() => Promise.reject(new Error("lost rejection")), 5);
  setTimeout(() => console.log("still running"), 20);
`;

Deno.test("without the crash guard an unhandled 'error' event ends the process", async () => {
  const r = await runChild(false, THROWING_PEER);
  assert.notEqual(r.code, 0);
  assert.ok(!r.lines.includes("still running"));
});

Deno.test("the crash guard logs an uncaught error and a lost rejection and keeps running", async () => {
  const r = await runChild(true, THROWING_PEER);
  assert.equal(r.code, 0);
  assert.equal(r.lines.at(-1), "still running");
  const logged = r.lines.slice(0, -1).map((l) => JSON.parse(l));
  assert.equal(logged.length, 2);
  assert.equal(logged[0].level, "error");
  assert.equal(logged[0].error, "broken peer");
  assert.match(logged[0].msg, /Uncaught error/);
  assert.equal(logged[1].error, "lost rejection");
});
