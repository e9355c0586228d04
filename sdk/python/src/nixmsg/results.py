"""Maps ``resp.data`` of the requests (spec 6.4–6.7) to the public dataclasses."""

from __future__ import annotations

from typing import Any

from .types import (
    DeliveryStatus,
    DirectoryEntry,
    DirectoryPage,
    GroupChange,
    GroupDetails,
    GroupMember,
    GroupMemberFailure,
    GroupSummary,
    GroupSummaryPage,
    PresenceInfo,
    RecallResult,
    SelfInfo,
    StatusResult,
)
from .wire import n, n_or_none, s

Data = dict[str, Any]


def _list(v: Any) -> list[Data]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def to_recall(d: Data) -> RecallResult:
    return RecallResult(
        result=s(d.get("result")),  # type: ignore[arg-type]
        recalled=n(d.get("recalled")),
        accepted=n(d.get("accepted")),
        other=n(d.get("other")),
    )


def to_status(d: Data) -> StatusResult:
    counts = d.get("counts")
    return StatusResult(
        id=s(d.get("id")),
        state=s(d.get("state")),  # type: ignore[arg-type]
        reason=s(d.get("reason")),
        send_at_ms=n(d.get("send_at_ms")),
        counts={str(k): n(v) for k, v in counts.items()} if isinstance(counts, dict) else {},
        items=[
            DeliveryStatus(
                endpoint_id=s(i.get("endpoint_id")),
                state=s(i.get("state")),  # type: ignore[arg-type]
                reason=s(i.get("reason")),
            )
            for i in _list(d.get("items"))
        ],
        next_cursor=s(d.get("next_cursor")),
    )


def to_self(d: Data) -> SelfInfo:
    return SelfInfo(
        id=s(d.get("id")),
        name=s(d.get("name")),
        source=s(d.get("source")),
        default_delay_ms=n(d.get("default_delay_ms")),
        talk_password_set=d.get("talk_password_set") is True,
        created_at_ms=n(d.get("created_at_ms")),
    )


def to_presence_list(d: Data) -> list[PresenceInfo]:
    return [
        PresenceInfo(
            id=s(i.get("id")),
            online=i.get("online") is True,
            since_ms=n_or_none(i.get("since_ms")),
            not_found=i.get("not_found") is True,
        )
        for i in _list(d.get("items"))
    ]


def to_directory(d: Data) -> DirectoryPage:
    return DirectoryPage(
        items=[
            DirectoryEntry(
                id=s(i.get("id")),
                name=s(i.get("name")),
                online=i.get("online") is True,
                online_since_ms=n_or_none(i.get("online_since_ms")),
                offline_since_ms=n_or_none(i.get("offline_since_ms")),
                talk_password_set=i.get("talk_password_set") is True,
            )
            for i in _list(d.get("items"))
        ],
        next_cursor=s(d.get("next_cursor")),
    )


def to_group_change(d: Data, group_id: str) -> GroupChange:
    added = d.get("added")
    return GroupChange(
        group_id=s(d.get("group_id")) or s(d.get("id")) or group_id,
        added=[str(x) for x in added] if isinstance(added, list) else [],
        failed=[GroupMemberFailure(s(f.get("id")), s(f.get("code"))) for f in _list(d.get("failed"))],
    )


def _summary(d: Data) -> GroupSummary:
    return GroupSummary(
        id=s(d.get("id")) or s(d.get("group_id")),
        name=s(d.get("name")),
        owner_id=s(d.get("owner_id")),
        member_count=n(d.get("member_count")),
    )


def to_group_list(d: Data) -> GroupSummaryPage:
    return GroupSummaryPage([_summary(i) for i in _list(d.get("items"))], s(d.get("next_cursor")))


def to_group_details(d: Data) -> GroupDetails:
    g = d.get("group")
    summary = _summary(g if isinstance(g, dict) else d)
    return GroupDetails(
        id=summary.id,
        name=summary.name,
        owner_id=summary.owner_id,
        member_count=summary.member_count,
        members=[
            GroupMember(s(m.get("id")), s(m.get("name")), m.get("online") is True)
            for m in _list(d.get("members"))
        ],
        next_cursor=s(d.get("next_cursor")),
    )
