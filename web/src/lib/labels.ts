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

/** Chinese names of the audit actions (docs/admin-api.md "Audit log"); unknown ones pass through. */
export const AUDIT_ACTIONS: Record<string, string> = {
  "admin.login": "登录",
  "admin.logout": "退出登录",
  "admin.password": "修改管理员密码",
  "admin.init": "初始化管理员密码",
  "admin.set_password": "重设管理员密码",
  "backup": "备份数据库",
  "token.create": "创建令牌",
  "token.update": "修改令牌",
  "token.delete": "删除令牌",
  "endpoint.create": "开通端",
  "endpoint.import": "批量开通",
  "endpoint.batch_disable": "批量停用",
  "endpoint.batch_enable": "批量启用",
  "endpoint.batch_delete": "批量删除",
  "endpoint.update": "修改端",
  "endpoint.disable": "停用端",
  "endpoint.enable": "启用端",
  "endpoint.delete": "删除端",
  "endpoint.kick": "踢下线",
  "endpoint.reset_login_password": "重置登录密码",
  "endpoint.unlock": "解除锁定",
  "endpoint.talk_password": "设置对话密码",
  "endpoint.webhook_put": "设置网络钩子",
  "endpoint.webhook_delete": "删除网络钩子",
  "endpoint.webhook_test": "发送网络钩子测试事件",
  "endpoint.inbox_body": "查看收件箱正文",
  "registration.update": "修改注册设置",
  "group.create": "创建群",
  "group.rename": "群改名",
  "group.dissolve": "解散群",
  "group.add": "加群成员",
  "group.remove": "移除群成员",
  "group.transfer": "转让群",
  "message.send": "发送测试消息",
  "message.recall": "撤回消息",
  "lockout.start": "开始锁定",
  "lockout.end": "解除锁定（安全）",
};

/** The action filter's choices: each family, then each action. */
export const AUDIT_ACTION_OPTIONS: { label: string; value: string }[] = [
  { label: "全部管理员会话操作", value: "admin" },
  { label: "全部令牌操作", value: "token" },
  { label: "全部端操作", value: "endpoint" },
  { label: "全部群操作", value: "group" },
  { label: "全部消息操作", value: "message" },
  { label: "全部锁定事件", value: "lockout" },
  ...Object.entries(AUDIT_ACTIONS).map(([value, label]) => ({
    label: `${label}（${value}）`,
    value,
  })),
];

export function auditActionLabel(action: string): string {
  return AUDIT_ACTIONS[action] ?? action;
}

/** "管理员", "令牌 billing", "命令行", "系统". */
export function auditActorLabel(actor: string): string {
  if (actor === "admin") return "管理员";
  if (actor === "cli") return "命令行";
  if (actor === "system") return "系统";
  if (actor.startsWith("token:")) return `令牌 ${actor.slice(6)}`;
  return actor;
}
