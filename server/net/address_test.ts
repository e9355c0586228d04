import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { dialableHost, formatHostPort, parseListenAddress, writeAddressFile } from "./address.ts";

Deno.test("parseListenAddress reads host:port, :port and [ipv6]:port", () => {
  assert.deepEqual(parseListenAddress(":7443"), { host: "", port: 7443 });
  assert.deepEqual(parseListenAddress("127.0.0.1:0"), { host: "127.0.0.1", port: 0 });
  assert.deepEqual(parseListenAddress("localhost:7444"), { host: "localhost", port: 7444 });
  assert.deepEqual(parseListenAddress("[::1]:8080"), { host: "::1", port: 8080 });
});

Deno.test("parseListenAddress refuses malformed addresses", () => {
  for (const bad of ["7443", "host:", "::1:80", "[x]:80", "h:70000", "h:-1", ""]) {
    assert.throws(() => parseListenAddress(bad), /Parse listen address/, bad);
  }
});

Deno.test("formatHostPort brackets IPv6 hosts only", () => {
  assert.equal(formatHostPort("127.0.0.1", 45678), "127.0.0.1:45678");
  assert.equal(formatHostPort("::1", 45678), "[::1]:45678");
  assert.equal(formatHostPort("localhost", 1), "localhost:1");
});

Deno.test("dialableHost turns wildcard addresses into loopback", () => {
  assert.equal(dialableHost("0.0.0.0"), "127.0.0.1");
  assert.equal(dialableHost(""), "127.0.0.1");
  assert.equal(dialableHost("::"), "::1");
  assert.equal(dialableHost("10.0.0.5"), "10.0.0.5");
});

Deno.test("writeAddressFile creates the data dir and writes the address", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const dataDir = join(dir, "nested", "data");
    await writeAddressFile(dataDir, "listen.addr", { host: "::", port: 45678 });
    assert.equal(await readFile(join(dataDir, "listen.addr"), "utf8"), "[::1]:45678");
    await writeAddressFile(dataDir, "listen.addr", { host: "127.0.0.1", port: 5 });
    assert.equal(await readFile(join(dataDir, "listen.addr"), "utf8"), "127.0.0.1:5");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
