/** Explains the members that could not join a group (`failed` of create and add). */
import type { FailedMember } from "../../api/types.ts";
import { errorCodeLabel } from "../../lib/labels.ts";

const CODES: Record<string, string> = {
  invalid_target: "端不存在",
  endpoint_disabled: "端已停用",
  group_full: "超过成员上限",
};

/** One line per member: "door-5：端已停用". */
export function describeFailures(failed: readonly FailedMember[]): string {
  return failed.map((f) => `${f.id}：${CODES[f.code] ?? errorCodeLabel(f.code)}`).join("\n");
}
