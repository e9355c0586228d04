/** Chinese names of the codes the admin API returns (spec 6.10, 7.1). Unknown codes pass through. */

const ERROR_CODES: Record<string, string> = {
  bad_request: "请求内容不合法",
  unauthorized: "身份校验失败",
  forbidden: "没有权限",
  not_found: "对象不存在",
  invalid_target: "目标不存在",
  conflict: "与已有内容冲突",
  id_taken: "编号已存在",
  rate_limited: "尝试过多，已临时锁定",
  not_member: "不是群成员",
  owner_cannot_leave: "群主不能直接退出",
  group_full: "超过成员上限",
  endpoint_disabled: "端已停用",
  busy: "服务器繁忙，请稍后重试",
  network: "无法连接服务器",
};

const MESSAGE_STATES: Record<string, string> = {
  scheduled: "未到发送时刻",
  dispatched: "投递中",
  completed: "已结束",
};

const DELIVERY_STATES: Record<string, string> = {
  pending: "未收下",
  accepted: "已确认",
  recalled: "已撤回",
  expired: "已过期",
  dropped: "未送达",
  rejected: "被拒绝",
};

const REASONS: Record<string, string> = {
  recalled: "已撤回",
  sender_left: "发送方已退群",
  no_recipients: "没有接收方",
  group_dissolved: "群已解散",
  sender_disabled: "发送方已停用",
  sender_deleted: "发送方已删除",
  endpoint_disabled: "接收方已停用",
  endpoint_deleted: "接收方已删除",
  ttl: "保留期已到",
  offline: "宽限期内一直离线",
  not_acked: "推送后确认超时",
  left_group: "已退出群",
  queue_full: "接收方排队已满",
  too_large: "超过接收方的包上限",
};

/** The Chinese meaning of an error code. */
export function errorCodeLabel(code: string): string {
  return ERROR_CODES[code] ?? code;
}

export function messageStateLabel(state: string): string {
  return MESSAGE_STATES[state] ?? state;
}

export function deliveryStateLabel(state: string): string {
  return DELIVERY_STATES[state] ?? state;
}

/** The meaning of a completion reason; "" stays "". */
export function reasonLabel(reason: string): string {
  if (reason === "") return "";
  const label = REASONS[reason];
  return label === undefined ? reason : `${label}（${reason}）`;
}

/** Options for a message state select. */
export const MESSAGE_STATE_OPTIONS = Object.entries(MESSAGE_STATES).map(([value, label]) => ({
  value,
  label,
}));

/** Tag colours for delivery states (naive-ui tag types). */
export function deliveryTagType(
  state: string,
): "default" | "success" | "warning" | "error" | "info" {
  switch (state) {
    case "accepted":
      return "success";
    case "pending":
      return "info";
    case "expired":
    case "dropped":
      return "warning";
    case "rejected":
      return "error";
    default:
      return "default";
  }
}
