// The CSV endpoint import (spec 8): all or nothing, bad rows named, progress as NDJSON, 1000
// rows in one transaction, generated passwords returned once.
import assert from "node:assert/strict";
import { online } from "./helpers/client.ts";
import { adminSession, auditLines } from "./helpers/admin.ts";
import { checkReply } from "./helpers/openapi_check.ts";

const HEADER = "id,name,login_password,talk_password,default_delay_seconds,remark";
const CSV = { "Content-Type": "text/csv" };

type Item = Record<string, unknown>;

Deno.test("an import with bad rows creates nothing and names every bad row and column", async () => {
  const { t, admin } = await adminSession();
  try {
    await t.createEndpoint("exists", "device-password-1");
    const csv = [
      HEADER,
      "ok1,甲,device-password-1,,0,",
      "ok2,乙,short,,0,", // row 3: password too short
      "bad id,丙,,,0,", // row 4: id
      "ok1,丁,,,0,", // row 5: duplicate of row 2
      "exists,戊,,,0,", // row 6: exists
      "ok3,己,,,ten,", // row 7: delay
      "ok4,庚,,", // row 8: field count
    ].join("\r\n");
    const r = await admin.post("/api/admin/endpoints/import", csv, { headers: CSV });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.code, "bad_request");
    const rows = ((r.json!.error as Item).data as Item).rows as Item[];
    assert.deepEqual(rows.map((p) => [p.row, p.column]), [
      [3, "login_password"],
      [4, "id"],
      [5, "id"],
      [6, "id"],
      [7, "default_delay_seconds"],
      [8, ""],
    ]);
    assert.match(rows[2].message as string, /第 2 行/);
    const list = await admin.get("/api/admin/endpoints");
    assert.deepEqual((list.data.items as Item[]).map((i) => i.id), ["exists"], "nothing created");
    const line = auditLines(t).find((l) => l.action === "endpoint.import");
    assert.equal(line?.result, "bad_request");
    assert.ok(!JSON.stringify(t.logs).includes("device-password-1"));
  } finally {
    await t.close();
  }
});

Deno.test("a bad header, an empty file and more than 1000 rows are refused as row problems", async () => {
  const { t, admin } = await adminSession();
  try {
    const post = (csv: string) => admin.post("/api/admin/endpoints/import", csv, { headers: CSV });
    const problems = async (csv: string) => {
      const r = await post(csv);
      assert.equal(r.status, 400, r.text);
      return ((r.json!.error as Item).data as Item).rows as Item[];
    };
    assert.equal((await problems("id,name\r\na,b"))[0].row, 1);
    assert.equal((await problems(""))[0].row, 1);
    assert.equal((await problems(HEADER + "\r\n"))[0].row, 1);
    assert.equal((await problems(HEADER + ",extra\r\n"))[0].row, 1);
    const many = [HEADER, ...Array.from({ length: 1001 }, (_, i) => `m${i},,,,,`)].join("\n");
    const tooMany = await problems(many);
    assert.equal(tooMany[0].row, 1002, "the first row past the limit");
    const unclosed = await problems(`${HEADER}\r\n"a,b,c,d,e,f`);
    assert.equal(unclosed[0].row, 2);
  } finally {
    await t.close();
  }
});

Deno.test("1000 rows import in one go with NDJSON progress, generated ids and passwords come back once, and they log in", async () => {
  const { t, admin } = await adminSession();
  try {
    const lines = [HEADER];
    for (let i = 0; i < 1000; i++) {
      const id = i % 10 === 0 ? "" : `dev-${String(i).padStart(4, "0")}`;
      const pw = i % 2 === 0 ? "" : `password-${i}`;
      lines.push(`${id},"设备 ${i}, 一楼",${pw},${i === 1 ? "talk" : ""},${i % 3},"备注 ""${i}"""`);
    }
    const body = "\uFEFF" + lines.join("\r\n") + "\r\n";
    const res = await fetch(`${t.adminUrl}/api/admin/endpoints/import`, {
      method: "POST",
      headers: {
        ...CSV,
        "Accept": "application/x-ndjson",
        "X-Nixmsg-Request": "1",
        "Cookie": admin.cookie!,
      },
      body,
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /^application\/x-ndjson/);
    const text = await res.text();
    // Every NDJSON line must match the OpenAPI document (AdminClient checks the other answers).
    checkReply("POST", res.url, res.status, res.headers.get("content-type") ?? "", text);
    const out = text.trim().split("\n").map((l) => JSON.parse(l) as Item);
    const progress = out.filter((l) => l.type === "progress");
    assert.deepEqual(progress[0], { type: "progress", done: 0, total: 1000 });
    assert.deepEqual(progress[progress.length - 1], { type: "progress", done: 1000, total: 1000 });
    const result = out[out.length - 1];
    assert.equal(result.type, "result");
    assert.equal(result.ok, true, JSON.stringify(result).slice(0, 300));
    const data = result.data as Item;
    assert.equal(data.created, 1000);
    const items = data.items as Item[];
    assert.equal(items.length, 1000);
    assert.deepEqual(items[0].row, 2);
    assert.match(items[0].id as string, /^e_[0-9a-z]{8}$/, "row 2 had no id");
    assert.equal(items[1].id, "dev-0001");
    assert.equal(items[1].login_password, undefined, "a given password is not echoed");
    assert.match(items[0].login_password as string, /^[A-Za-z2-9]{20}$/);
    assert.equal(new Set(items.map((i) => i.id)).size, 1000);

    const list = await admin.get("/api/admin/endpoints?limit=1&q=dev-0001");
    const row = (list.data.items as Item[])[0];
    assert.deepEqual(
      [row.name, row.remark, row.default_delay_ms, row.talk_password_set, row.source],
      ["设备 1, 一楼", '备注 "1"', 1000, true, "admin"],
    );
    assert.equal((await admin.get("/api/admin/endpoints?limit=1")).data.total, 1000);
    const gen = await online(t.wsUrl, items[0].id as string, items[0].login_password as string);
    await gen.client.close();
    const given = await online(t.tcpUrl, "dev-0001", "password-1");
    await given.client.close();
    const line = auditLines(t).find((l) => l.action === "endpoint.import");
    assert.deepEqual([line?.object, line?.result], ["1000 rows", "ok"]);
    assert.ok(!JSON.stringify(t.logs).includes(items[0].login_password as string));
  } finally {
    await t.close();
  }
});

Deno.test("without the NDJSON Accept header the import answers once with plain JSON", async () => {
  const { t, admin } = await adminSession();
  try {
    const csv = `${HEADER}\nplain1,,,,,\nplain2,名,device-password-2,,5,备注\n`;
    const r = await admin.post("/api/admin/endpoints/import", csv, { headers: CSV });
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get("content-type") ?? "", /^application\/json/);
    assert.equal(r.data.created, 2);
    const items = r.data.items as Item[];
    assert.deepEqual(items.map((i) => [i.row, i.id]), [[2, "plain1"], [3, "plain2"]]);
    const again = await admin.post("/api/admin/endpoints/import", csv, { headers: CSV });
    assert.equal(again.status, 400, "the ids exist now");
  } finally {
    await t.close();
  }
});

Deno.test("a client that goes away while passwords are hashed gets nothing created: its passwords could never be shown", async () => {
  const { t, admin } = await adminSession();
  try {
    const lines = [HEADER];
    for (let i = 0; i < 1000; i++) lines.push(`gone-${i},,,talk-${i},,`);
    const abort = new AbortController();
    const res = await fetch(`${t.adminUrl}/api/admin/endpoints/import`, {
      method: "POST",
      headers: {
        ...CSV,
        "Accept": "application/x-ndjson",
        "X-Nixmsg-Request": "1",
        "Cookie": admin.cookie!,
      },
      body: lines.join("\n"),
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    const first = JSON.parse(new TextDecoder().decode((await reader.read()).value).split("\n")[0]);
    assert.deepEqual(first, { type: "progress", done: 0, total: 1000 });
    abort.abort();
    await reader.cancel().catch(() => {});
    const line = await t.waitLog((l) => l.msg === "audit" && l.action === "endpoint.import");
    assert.equal(line.result, "aborted");
    assert.equal((await admin.get("/api/admin/endpoints?limit=1")).data.total, 0);
  } finally {
    await t.close();
  }
});
