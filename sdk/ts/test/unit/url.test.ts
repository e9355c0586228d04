import assert from "node:assert/strict";
import { test } from "node:test";
import { connectionUrl, registerUrl } from "../../src/url.ts";
import { code } from "../helpers/src_errors.ts";

test("registerUrl maps wss/ws/mqtts/mqtt to https/http + /api/client/register (spec 6.9)", () => {
  const cases: [string, string][] = [
    ["wss://relay.example:7443/mqtt", "https://relay.example:7443/api/client/register"],
    ["ws://127.0.0.1:7443/mqtt", "http://127.0.0.1:7443/api/client/register"],
    ["mqtts://relay.example:7443", "https://relay.example:7443/api/client/register"],
    ["mqtt://10.0.0.5:7443", "http://10.0.0.5:7443/api/client/register"],
    ["https://relay.example", "https://relay.example/api/client/register"],
    ["wss://relay.example/prefix/mqtt", "https://relay.example/prefix/api/client/register"],
    ["ws://[::1]:7443/mqtt/", "http://[::1]:7443/api/client/register"],
  ];
  for (const [from, to] of cases) assert.equal(registerUrl(from), to, from);
});

test("connectionUrl uses WebSocket /mqtt unless TCP is asked for (spec 9 step 1)", () => {
  assert.equal(connectionUrl("wss://relay.example:7443/mqtt"), "wss://relay.example:7443/mqtt");
  assert.equal(connectionUrl("https://relay.example"), "wss://relay.example/mqtt");
  assert.equal(connectionUrl("mqtt://127.0.0.1:7443"), "ws://127.0.0.1:7443/mqtt");
  assert.equal(connectionUrl("mqtts://relay.example:7443"), "wss://relay.example:7443/mqtt");
  assert.equal(connectionUrl("ws://127.0.0.1:7443/mqtt", "tcp"), "mqtt://127.0.0.1:7443");
  assert.equal(connectionUrl("wss://relay.example:7443/mqtt", "tcp"), "mqtts://relay.example:7443");
});

test("unsupported or unparsable URLs are refused", () => {
  assert.throws(() => connectionUrl("ftp://x"), code("bad_request"));
  assert.throws(() => registerUrl("not a url"), code("bad_request"));
});
