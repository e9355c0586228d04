/** Columns and tags of the message record tables. */
import { h, type VNodeChild } from "vue";
import { RouterLink } from "vue-router";
import { type DataTableColumns, NEllipsis, NSpace, NTag } from "naive-ui";
import type { DeliveryState, MessageRecord, Recipient } from "../../api/types.ts";
import { formatTime } from "../../lib/time.ts";
import {
  deliveryStateLabel,
  deliveryTagType,
  messageStateLabel,
  reasonLabel,
} from "../../lib/labels.ts";

const DELIVERY_ORDER: DeliveryState[] = [
  "pending",
  "accepted",
  "recalled",
  "expired",
  "dropped",
  "rejected",
];

export function messageStateTag(state: string): VNodeChild {
  const type = state === "completed" ? "default" : state === "dispatched" ? "info" : "warning";
  return h(NTag, { size: "small", bordered: false, type }, {
    default: () => messageStateLabel(state),
  });
}

export function deliveryTag(state: string): VNodeChild {
  return h(NTag, { size: "small", bordered: false, type: deliveryTagType(state) }, {
    default: () => deliveryStateLabel(state),
  });
}

/** The non-zero delivery counts as small tags ("未收下 2", "已确认 9"). */
export function countTags(counts: MessageRecord["counts"]): VNodeChild {
  const tags = DELIVERY_ORDER.filter((s) => (counts[s] ?? 0) > 0).map((s) =>
    h(NTag, { size: "small", bordered: false, type: deliveryTagType(s) }, {
      default: () => `${deliveryStateLabel(s)} ${counts[s]}`,
    })
  );
  return tags.length === 0 ? "—" : h(NSpace, { size: 4 }, { default: () => tags });
}

/** "单聊 door-1" or "群 g_x". */
export function destText(m: MessageRecord): string {
  return `${m.dest_kind === "group" ? "群" : "单聊"} ${m.dest_id}`;
}

/**
 * The message list's columns. The number stays at the left and the two times at the right while
 * the middle scrolls (spec 2.4 fits 1280 px); on a phone only the number stays put.
 */
export function messageColumns(phone = false): DataTableColumns<MessageRecord> {
  const right = phone ? undefined : ("right" as const);
  return [
    {
      title: "序号",
      key: "seq",
      width: 80,
      fixed: "left",
      render: (m) => h(RouterLink, { to: `/messages/${m.seq}` }, { default: () => String(m.seq) }),
    },
    {
      title: "消息号",
      key: "id",
      width: 170,
      render: (m) => h(NEllipsis, {}, { default: () => m.id }),
    },
    { title: "发送方", key: "sender_id", width: 130 },
    { title: "目标", key: "dest_id", width: 150, render: destText },
    { title: "状态", key: "state", width: 90, render: (m) => messageStateTag(m.state) },
    { title: "投递", key: "counts", minWidth: 180, render: (m) => countTags(m.counts) },
    {
      title: "原因",
      key: "reason",
      width: 130,
      render: (m) => h(NEllipsis, {}, { default: () => reasonLabel(m.reason) || "—" }),
    },
    {
      title: "提交时间",
      key: "created_at",
      width: 160,
      fixed: right,
      render: (m) => formatTime(m.created_at),
    },
    {
      title: "发送时刻",
      key: "send_at",
      width: 160,
      fixed: right,
      render: (m) => formatTime(m.send_at),
    },
  ];
}

/**
 * The per-recipient results. At 1280×800 the content is about 1,070 px wide: the columns add up
 * to 1,030 px, so 更新时间 stays on screen (issue 32 item 4).
 */
export function recipientColumns(): DataTableColumns<Recipient> {
  return [
    {
      title: "接收端",
      key: "endpoint_id",
      width: 140,
      fixed: "left",
      render: (r) =>
        h(RouterLink, { to: `/endpoints/${encodeURIComponent(r.endpoint_id)}` }, {
          default: () => r.endpoint_id,
        }),
    },
    { title: "结果", key: "state", width: 90, render: (r) => deliveryTag(r.state) },
    {
      title: "原因",
      key: "reason",
      minWidth: 120,
      render: (r) => h(NEllipsis, {}, { default: () => reasonLabel(r.reason) || "—" }),
    },
    { title: "推送次数", key: "attempts", width: 80 },
    { title: "发送时刻", key: "send_at", width: 150, render: (r) => formatTime(r.send_at) },
    { title: "最近推送", key: "pushed_at", width: 150, render: (r) => formatTime(r.pushed_at) },
    { title: "到期时间", key: "expire_at", width: 150, render: (r) => formatTime(r.expire_at) },
    { title: "更新时间", key: "updated_at", width: 150, render: (r) => formatTime(r.updated_at) },
  ];
}
