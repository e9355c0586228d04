import assert from "node:assert/strict";
import { type Conn, ConnectionTable } from "./connections.ts";

function conn(code: string, endpointId: string): Conn {
  return {
    code,
    endpointId,
    transport: "tcp",
    remoteAddress: "127.0.0.1",
    protocolVersion: 5,
    maxPacketSize: null,
    issuedToken: null,
    subscribed: false,
    handshaken: false,
    maxReceiveBytes: null,
    helloTimer: null,
    queue: null,
    closed: false,
  };
}

Deno.test("a late disconnect of a taken-over connection is not the current one", () => {
  const t = new ConnectionTable();
  t.add(conn("old", "a"));
  t.add(conn("new", "a")); // takeover: the new connection becomes current first
  const old = t.remove("old");
  assert.equal(old?.wasCurrent, false);
  assert.equal(t.current("a")?.code, "new");
  const cur = t.remove("new");
  assert.equal(cur?.wasCurrent, true);
  assert.equal(t.current("a"), undefined);
  assert.equal(t.remove("new"), null);
});

Deno.test("the connection table keeps endpoints apart", () => {
  const t = new ConnectionTable();
  t.add(conn("c1", "a"));
  t.add(conn("c2", "b"));
  assert.ok(t.isCurrent("a", "c1"));
  assert.ok(!t.isCurrent("a", "c2"));
  assert.equal(t.size, 2);
  assert.deepEqual([...t.all()].map((c) => c.code).sort(), ["c1", "c2"]);
});
