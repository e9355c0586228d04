/** Named downlink fixtures: the spec's examples with their exact wire text; import from fixtures.ts. */
import type { DownlinkFrame } from "./frames.ts";

/** A downlink frame and the exact JSON text spec 6 shows for it. */
export interface DownlinkFixture {
  readonly frame: DownlinkFrame;
  readonly json: string;
}

/** One fixture per downlink frame type, taken from the examples of spec 6. */
export const DOWNLINK_FRAMES: Readonly<Record<string, DownlinkFixture>> = {
  respOk: {
    frame: { v: 1, type: "resp", rid: "1", ok: true, data: {} },
    json: '{"v":1,"type":"resp","rid":"1","ok":true,"data":{}}',
  },
  respErr: {
    frame: {
      v: 1,
      type: "resp",
      rid: "1",
      ok: false,
      error: { code: "talk_password_required", message: "需要对话密码" },
    },
    json:
      '{"v":1,"type":"resp","rid":"1","ok":false,"error":{"code":"talk_password_required","message":"需要对话密码"}}',
  },
  msgToGroup: {
    frame: {
      v: 1,
      type: "msg",
      id: "018f.x",
      from: "app-1",
      to: { kind: "group", id: "g_ab12cd34" },
      body: { enc: "utf8", content_type: "text/plain", data: "hello" },
      meta: {},
      send_at_ms: 1750000010000,
    },
    json:
      '{"v":1,"type":"msg","id":"018f.x","from":"app-1","to":{"kind":"group","id":"g_ab12cd34"},' +
      '"body":{"enc":"utf8","content_type":"text/plain","data":"hello"},"meta":{},"send_at_ms":1750000010000}',
  },
  receiptAccepted: {
    frame: {
      v: 1,
      type: "receipt",
      receipt_id: "9001",
      id: "018f.x",
      endpoint_id: "device-1",
      state: "accepted",
      reason: "",
      at_ms: 1750000012000,
    },
    json: '{"v":1,"type":"receipt","receipt_id":"9001","id":"018f.x","endpoint_id":"device-1",' +
      '"state":"accepted","reason":"","at_ms":1750000012000}',
  },
  revokedRecalled: {
    frame: { v: 1, type: "revoked", id: "018f.x", from: "app-1", reason: "recalled" },
    json: '{"v":1,"type":"revoked","id":"018f.x","from":"app-1","reason":"recalled"}',
  },
  presenceOnline: {
    frame: { v: 1, type: "presence", id: "a", online: true, at_ms: 1750000000000 },
    json: '{"v":1,"type":"presence","id":"a","online":true,"at_ms":1750000000000}',
  },
  groupEventMemberAdded: {
    frame: {
      v: 1,
      type: "group_event",
      group_id: "g_ab12cd34",
      event: "member_added",
      endpoint_id: "c",
      at_ms: 1750000000000,
    },
    json: '{"v":1,"type":"group_event","group_id":"g_ab12cd34","event":"member_added",' +
      '"endpoint_id":"c","at_ms":1750000000000}',
  },
  fatalDisabled: {
    frame: { v: 1, type: "fatal", reason: "disabled" },
    json: '{"v":1,"type":"fatal","reason":"disabled"}',
  },
};
