/** Columns of the audit log (操作日志). */
import { h } from "vue";
import { type DataTableColumns, NEllipsis, NTag } from "naive-ui";
import type { AuditRecord } from "../../api/types.ts";
import { formatTime } from "../../lib/time.ts";
import { auditActionLabel, auditActorLabel, errorCodeLabel } from "../../lib/labels.ts";

/** 成功, an error's Chinese name, or a lockout's `<kind>/<rule>` as is. */
export function auditResultText(r: AuditRecord): string {
  if (r.result === "ok") return "成功";
  if (r.action.startsWith("lockout.")) return r.result;
  return errorCodeLabel(r.result);
}

function resultTag(r: AuditRecord) {
  const type = r.result === "ok"
    ? "success"
    : r.action.startsWith("lockout.")
    ? "warning"
    : "error";
  return h(NTag, { size: "small", bordered: false, type }, { default: () => auditResultText(r) });
}

const ellipsis = (text: string) => h(NEllipsis, {}, { default: () => text || "—" });

/** The audit table's columns: time, action and result first, so a phone shows them. */
export function auditColumns(): DataTableColumns<AuditRecord> {
  return [
    { title: "时间", key: "at", width: 160, render: (r) => formatTime(r.at) },
    {
      title: "动作",
      key: "action",
      width: 180,
      render: (r) => ellipsis(auditActionLabel(r.action)),
    },
    { title: "结果", key: "result", width: 130, render: resultTag },
    { title: "对象", key: "target", minWidth: 160, render: (r) => ellipsis(r.target) },
    {
      title: "操作者",
      key: "actor",
      width: 140,
      render: (r) => ellipsis(auditActorLabel(r.actor)),
    },
    { title: "来源 IP", key: "ip", width: 140, render: (r) => r.ip || "—" },
  ];
}
