import { assertFails, assertParses, BAD_OTHER, fixturesOf, GOOD_OTHER } from "./fixtures.ts";
import type { RequestType } from "./frames.ts";

// The frames of parse_frames.ts: spec 6.1 and 6.3–6.6.
const TYPES: RequestType[] = [
  "hello",
  "ack",
  "recall",
  "status",
  "receipt_ack",
  "presence.get",
  "directory.list",
  "presence.watch",
  "unlock",
  "self.get",
  "self.update",
  "self.talk_password",
  "self.login_password",
  "self.logout",
];

Deno.test("good hello, ack, status, presence and self requests parse with their defaults", () => {
  for (const [name, fixture] of fixturesOf(GOOD_OTHER, TYPES)) assertParses(name, fixture);
});

Deno.test("bad hello, ack, status, presence and self requests fail with bad_request", () => {
  for (const [name, fixture] of fixturesOf(BAD_OTHER, TYPES)) assertFails(name, fixture);
});
