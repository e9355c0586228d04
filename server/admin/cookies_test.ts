import assert from "node:assert/strict";
import { clearedCookie, readCookie, sessionCookie } from "./cookies.ts";

// spec 8: nixmsg_admin, HttpOnly, SameSite=Lax, Secure over HTTPS.

Deno.test("sessionCookie sets HttpOnly, SameSite=Lax, Path=/, 12 h, and Secure only when asked", () => {
  assert.equal(
    sessionCookie("v", false),
    "nixmsg_admin=v; Path=/; Max-Age=43200; HttpOnly; SameSite=Lax",
  );
  assert.match(sessionCookie("v", true), /; SameSite=Lax; Secure$/);
  assert.match(clearedCookie(false), /^nixmsg_admin=; Path=\/; Max-Age=0; HttpOnly/);
});

Deno.test("readCookie finds one cookie among several and ignores look-alikes", () => {
  assert.equal(readCookie("a=1; nixmsg_admin=tok; b=2", "nixmsg_admin"), "tok");
  assert.equal(readCookie("xnixmsg_admin=bad", "nixmsg_admin"), undefined);
  assert.equal(readCookie(undefined, "nixmsg_admin"), undefined);
  assert.equal(readCookie("broken; nixmsg_admin=", "nixmsg_admin"), "");
});
