import assert from "node:assert/strict";
import { AddressShare } from "./address_share.ts";

Deno.test("AddressShare refuses a key at its cap, frees on release and forgets empty keys", () => {
  const share = new AddressShare(2);
  const a1 = share.take("a")!;
  const a2 = share.take("a")!;
  assert.equal(share.take("a"), null);
  assert.notEqual(share.take("b"), null);
  a1();
  a1(); // a second release changes nothing
  assert.equal(share.heldBy("a"), 1);
  a2();
  assert.equal(share.heldBy("a"), 0);
  assert.equal(share.keys, 1); // only "b" is kept
  assert.throws(() => new AddressShare(0), RangeError);
});
