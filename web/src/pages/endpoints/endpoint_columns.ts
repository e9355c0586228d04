/** The columns of the endpoint list. */
import { h } from "vue";
import { RouterLink } from "vue-router";
import { type DataTableColumns, NEllipsis, NTag } from "naive-ui";
import type { Endpoint } from "../../api/types.ts";
import { formatTime } from "../../lib/time.ts";

/** A small tag. */
export function tag(text: string, type: "default" | "success" | "warning" | "error" | "info") {
  return h(NTag, { size: "small", type, bordered: false }, { default: () => text });
}

export const SOURCE_LABELS: Record<Endpoint["source"], string> = {
  admin: "后台开通",
  self: "自助注册",
};

/**
 * The endpoint list's columns: the checkbox and the id stay at the left, the creation time at the
 * right (spec 2.4 fits 1280 px); on a phone only the left ones stay put.
 */
export function endpointColumns(phone = false): DataTableColumns<Endpoint> {
  return [
    { type: "selection", width: 40, fixed: "left" },
    {
      title: "编号",
      key: "id",
      width: 150,
      fixed: "left",
      render: (r) =>
        h(RouterLink, { to: `/endpoints/${encodeURIComponent(r.id)}` }, { default: () => r.id }),
    },
    {
      title: "名称",
      key: "name",
      width: 140,
      render: (r) => h(NEllipsis, {}, { default: () => r.name || "—" }),
    },
    {
      title: "状态",
      key: "enabled",
      width: 80,
      render: (r) => (r.enabled ? tag("启用", "success") : tag("停用", "error")),
    },
    {
      title: "在线",
      key: "online",
      width: 80,
      render: (r) => (r.online ? tag("在线", "info") : tag("离线", "default")),
    },
    { title: "来源", key: "source", width: 90, render: (r) => SOURCE_LABELS[r.source] },
    {
      title: "对话密码",
      key: "talk_password_set",
      width: 80,
      render: (r) => (r.talk_password_set ? "已设置" : "—"),
    },
    {
      title: "备注",
      key: "remark",
      minWidth: 160,
      render: (r) => h(NEllipsis, {}, { default: () => r.remark || "—" }),
    },
    {
      title: "开通时间",
      key: "created_at",
      width: 160,
      fixed: phone ? undefined : "right",
      render: (r) => formatTime(r.created_at),
    },
  ];
}
