/** Maps `resp.data` of the requests (spec 6.4–6.7) to the public camelCase types. */
import { num, numOrNull, str } from "./wire.ts";
import type {
  DeliveryStatus,
  DirectoryEntry,
  GroupChange,
  GroupDetails,
  GroupMember,
  GroupMemberFailure,
  GroupSummary,
  Page,
  PresenceInfo,
  RecallResult,
  SelfInfo,
  StatusResult,
} from "./types.ts";

type Data = Record<string, unknown>;

function list(v: unknown): Data[] {
  return Array.isArray(v) ? v.filter((x): x is Data => typeof x === "object" && x !== null) : [];
}

export function toRecall(d: Data): RecallResult {
  return {
    result: str(d.result) as RecallResult["result"],
    recalled: num(d.recalled),
    accepted: num(d.accepted),
    other: num(d.other),
  };
}

export function toStatus(d: Data): StatusResult {
  return {
    id: str(d.id),
    state: str(d.state) as StatusResult["state"],
    reason: str(d.reason),
    sendAtMs: num(d.send_at_ms),
    counts: (d.counts ?? {}) as StatusResult["counts"],
    items: list(d.items).map((i): DeliveryStatus => ({
      endpointId: str(i.endpoint_id),
      state: str(i.state) as DeliveryStatus["state"],
      reason: str(i.reason),
    })),
    nextCursor: str(d.next_cursor),
  };
}

export function toSelf(d: Data): SelfInfo {
  return {
    id: str(d.id),
    name: str(d.name),
    source: str(d.source),
    defaultDelayMs: num(d.default_delay_ms),
    talkPasswordSet: d.talk_password_set === true,
    createdAtMs: num(d.created_at_ms),
  };
}

export function toPresenceList(d: Data): PresenceInfo[] {
  return list(d.items).map((i) => ({
    id: str(i.id),
    online: i.online === true,
    sinceMs: numOrNull(i.since_ms),
    notFound: i.not_found === true,
  }));
}

export function toDirectory(d: Data): Page<DirectoryEntry> {
  return {
    items: list(d.items).map((i) => ({
      id: str(i.id),
      name: str(i.name),
      online: i.online === true,
      onlineSinceMs: numOrNull(i.online_since_ms),
      offlineSinceMs: numOrNull(i.offline_since_ms),
      talkPasswordSet: i.talk_password_set === true,
    })),
    nextCursor: str(d.next_cursor),
  };
}

export function toGroupChange(d: Data, groupId: string): GroupChange {
  return {
    groupId: str(d.group_id) || str(d.id) || groupId,
    added: Array.isArray(d.added) ? d.added.map(String) : [],
    failed: list(d.failed).map((f): GroupMemberFailure => ({
      id: str(f.id),
      code: str(f.code),
    })),
  };
}

function toSummary(d: Data): GroupSummary {
  return {
    id: str(d.id) || str(d.group_id),
    name: str(d.name),
    ownerId: str(d.owner_id),
    memberCount: num(d.member_count),
  };
}

export function toGroupList(d: Data): Page<GroupSummary> {
  return {
    items: list(d.items).map(toSummary),
    nextCursor: str(d.next_cursor),
  };
}

export function toGroupDetails(d: Data): GroupDetails {
  const group = typeof d.group === "object" && d.group !== null ? (d.group as Data) : d;
  return {
    ...toSummary(group),
    members: {
      items: list(d.members).map((m): GroupMember => ({
        id: str(m.id),
        name: str(m.name),
        online: m.online === true,
      })),
      nextCursor: str(d.next_cursor),
    },
  };
}
