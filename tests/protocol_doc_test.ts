// docs/protocol.md cannot drift from the server (issue 16): its request examples parse with the
// server's parser, its downlink examples have the shape of the server's fixtures, every request
// type and error code is there, and its response examples have the shape of the answers a real
// server gives to the very same requests.
import assert from "node:assert/strict";
import {
  ERROR_CODES,
  errorInfo,
  parseRequest,
  REQUEST_TYPES,
  type RequestType,
} from "../server/protocol/mod.ts";
import { DOWNLINK_FRAMES, encodeWire, TEST_LIMITS } from "../server/protocol/fixtures.ts";
import { TestClient } from "./helpers/client.ts";
import { startTestServer } from "./helpers/test_server.ts";

type Json = Record<string, unknown>;

interface Section {
  type: string;
  request: Json | null;
  response: Json | null;
}

interface Doc {
  text: string;
  sections: Section[];
  downlinks: Json[];
}

/** Reads the ```json blocks under their `### \`type\`` heading and their label line. */
async function readDoc(): Promise<Doc> {
  const text = await Deno.readTextFile(new URL("../docs/protocol.md", import.meta.url));
  const lines = text.split("\n");
  const sections: Section[] = [];
  const downlinks: Json[] = [];
  let section: Section | null = null;
  let label = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const heading = /^### `([a-z_.]+)`$/.exec(line);
    if (heading !== null) {
      section = { type: heading[1], request: null, response: null };
      sections.push(section);
      continue;
    }
    if (line.startsWith("## ")) section = null;
    if (line !== "" && !line.startsWith("```")) label = line;
    if (line !== "```json") continue;
    const end = lines.indexOf("```", i + 1);
    assert.ok(end > i, `unclosed block at line ${i + 1}`);
    const block = lines.slice(i + 1, end).join("\n");
    const where = `docs/protocol.md line ${i + 1}`;
    let value: Json;
    try {
      value = JSON.parse(block);
    } catch (err) {
      throw new Error(`${where}: not JSON: ${err}`);
    }
    i = end;
    if (label === "Downlink:") {
      downlinks.push(value);
      continue;
    }
    assert.ok(section !== null, `${where}: a block outside a frame section`);
    if (label === "Request:") section.request = value;
    else if (label === "Response `data`:") section.response = value;
    else throw new Error(`${where}: a block under an unknown label: ${label}`);
  }
  return { text, sections, downlinks };
}

/** The same shape: equal key sets all the way down, the same JSON types (null fits anything). */
function shapeProblem(doc: unknown, real: unknown, path = "data"): string | null {
  if (doc === null || real === null) return null;
  if (Array.isArray(doc) || Array.isArray(real)) {
    if (!Array.isArray(doc) || !Array.isArray(real)) return `${path}: array vs not`;
    if (doc.length === 0 || real.length === 0) return null;
    return shapeProblem(doc[0], real[0], `${path}[0]`);
  }
  if (typeof doc !== typeof real) return `${path}: ${typeof doc} in the doc, ${typeof real} real`;
  if (typeof doc !== "object") return null;
  const d = doc as Json;
  const r = real as Json;
  const dk = Object.keys(d).sort().join(",");
  const rk = Object.keys(r).sort().join(",");
  if (dk !== rk) return `${path}: keys {${dk}} in the doc, {${rk}} real`;
  for (const k of Object.keys(d)) {
    const p = shapeProblem(d[k], r[k], `${path}.${k}`);
    if (p !== null) return p;
  }
  return null;
}

Deno.test("every request example in docs/protocol.md parses with the server's parser as its section's type", async () => {
  const { sections } = await readDoc();
  const documented = new Set<string>();
  for (const s of sections) {
    if (s.request === null) continue;
    const parsed = parseRequest(encodeWire(s.request), TEST_LIMITS);
    assert.ok(parsed.ok, `${s.type}: ${parsed.ok ? "" : parsed.error.message}`);
    assert.equal(parsed.frame.type, s.type);
    assert.ok(s.response !== null, `${s.type}: no response example`);
    documented.add(s.type);
  }
  assert.deepEqual([...documented].sort(), [...REQUEST_TYPES].sort());
});

Deno.test("every downlink example in docs/protocol.md has the shape of a server fixture, and every downlink type is there", async () => {
  const { sections, downlinks } = await readDoc();
  const fixtures = Object.values(DOWNLINK_FRAMES).map((f) => JSON.parse(f.json) as Json);
  const fixtureTypes = new Set(fixtures.map((f) => f.type as string));
  for (const frame of downlinks) {
    const same = fixtures.filter((f) => f.type === frame.type && f.ok === frame.ok);
    assert.ok(same.length > 0, `no fixture of type ${frame.type}`);
    const problems = same.map((f) => shapeProblem(frame, f, String(frame.type)));
    assert.ok(problems.includes(null), problems.join("; "));
  }
  const documented = new Set(downlinks.map((f) => f.type as string));
  assert.deepEqual([...documented].sort(), [...fixtureTypes].sort());
  const headings = new Set(sections.map((s) => s.type));
  for (const type of fixtureTypes) assert.ok(headings.has(type), `no section for ${type}`);
});

Deno.test("docs/protocol.md lists every error code with its HTTP status", async () => {
  const { text } = await readDoc();
  for (const code of ERROR_CODES) {
    const row = new RegExp(`^\\| \`${code}\` +\\| ${errorInfo(code).status} +\\|`, "m");
    assert.match(text, row, `error code ${code}`);
  }
});

/** Request types whose example is sent to a real server, in document order. */
const LIVE_SKIPPED: readonly RequestType[] = [
  "ack", // acknowledges a message pushed to this endpoint; the example's one does not exist
  "receipt_ack", // the example's receipt does not exist
  "self.logout", // closes the connection
  "group.dissolve", // after group.leave this endpoint is no longer the owner
];

Deno.test("the response examples of docs/protocol.md have the shape of a real server's answers to the same requests", async () => {
  const { sections } = await readDoc();
  const t = await startTestServer();
  const password = "old-password-1"; // the example's old_password of self.login_password
  const clients: TestClient[] = [];
  try {
    for (const id of ["device-1", "a", "c"]) await t.createEndpoint(id, "device-password-1");
    await t.createEndpoint("app-1", password);
    await t.createEndpoint("b", "device-password-1");
    const b = await TestClient.connect(t.wsUrl, "b", "device-password-1");
    clients.push(b);
    await b.handshake();
    const set = await b.request({ type: "self.talk_password", talk_password: "secret" });
    assert.equal(set.ok, true, JSON.stringify(set));
    const app = await TestClient.connect(t.wsUrl, "app-1", password);
    clients.push(app);
    await app.subscribe();
    let checked = 0;
    for (const s of sections) {
      if (s.request === null || LIVE_SKIPPED.includes(s.type as RequestType)) continue;
      const resp = await app.request({ ...s.request, rid: app.nextRid() });
      assert.equal(resp.ok, true, `${s.type}: ${JSON.stringify(resp)}`);
      const problem = shapeProblem(s.response, resp.data, s.type);
      assert.equal(problem, null, `${s.type}: ${JSON.stringify(resp.data)}`);
      checked++;
    }
    assert.equal(checked, REQUEST_TYPES.length - LIVE_SKIPPED.length);
  } finally {
    for (const c of clients) await c.close();
    await t.close();
  }
});
