"""The requests of spec 6.4–6.7 as coroutines on a :class:`ClientCore`; both clients wrap them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .core import ClientCore
from .errors import ConfigError
from .link import StopCause
from .results import (
    to_directory,
    to_group_change,
    to_group_details,
    to_group_list,
    to_presence_list,
    to_recall,
    to_self,
    to_status,
)
from .types import (
    DirectoryPage,
    GroupChange,
    GroupDetails,
    GroupMemberInput,
    GroupSummaryPage,
    PresenceInfo,
    RecallResult,
    SelfInfo,
    StatusResult,
)

#: A group member: an id, or an id with that member's talk password.
MemberArg = str | GroupMemberInput


async def recall(core: ClientCore, message_id: str) -> RecallResult:
    return to_recall(await core.request("recall", {"id": message_id}))


async def status(core: ClientCore, message_id: str, cursor: str, limit: int) -> StatusResult:
    return to_status(await core.request("status", {"id": message_id, "cursor": cursor, "limit": limit}))


async def unlock(core: ClientCore, endpoint_id: str, talk_password: str) -> None:
    await core.request("unlock", {"endpoint_id": endpoint_id, "talk_password": talk_password})


async def presence(core: ClientCore, ids: Sequence[str]) -> list[PresenceInfo]:
    return to_presence_list(await core.request("presence.get", {"ids": list(ids)}))


async def directory(core: ClientCore, cursor: str, query: str, limit: int) -> DirectoryPage:
    return to_directory(
        await core.request("directory.list", {"cursor": cursor, "limit": limit, "query": query})
    )


async def watch_presence(core: ClientCore, ids: Sequence[str] | str) -> None:
    if isinstance(ids, str):
        if ids != "all":
            raise ConfigError('watch_presence takes a list of ids or "all"')
        watch: dict[str, Any] = {"ids": [], "all": True}
    else:
        watch = {"ids": list(ids), "all": False}
    await core.watch_presence(watch)


async def get_self(core: ClientCore) -> SelfInfo:
    return to_self(await core.request("self.get", {}))


async def update_self(core: ClientCore, name: str | None, default_delay_ms: int | None) -> None:
    fields: dict[str, Any] = {}
    if name is not None:
        fields["name"] = name
    if default_delay_ms is not None:
        fields["default_delay_ms"] = default_delay_ms
    await core.request("self.update", fields)


async def set_talk_password(core: ClientCore, talk_password: str) -> None:
    await core.request("self.talk_password", {"talk_password": talk_password})


async def change_login_password(core: ClientCore, old_password: str, new_password: str) -> None:
    d = await core.request(
        "self.login_password", {"old_password": old_password, "new_password": new_password}
    )
    token = d.get("session_token")
    if isinstance(token, str):
        core.use_token(token)


async def logout(core: ClientCore) -> None:
    # The server closes the connection after its response: that close must not reconnect.
    async def request() -> None:
        await core.request("self.logout", {})

    await core.stop_with(StopCause("offline", "logout"), request)


def _members(members: Sequence[MemberArg]) -> list[dict[str, str]]:
    return [
        {"id": m, "talk_password": ""}
        if isinstance(m, str)
        else {"id": m.id, "talk_password": m.talk_password}
        for m in members
    ]


async def group_create(
    core: ClientCore, name: str, members: Sequence[MemberArg], group_id: str
) -> GroupChange:
    d = await core.request(
        "group.create", {"id": group_id, "name": name, "members": _members(members)}
    )
    return to_group_change(d, group_id)


async def group_add(core: ClientCore, group_id: str, members: Sequence[MemberArg]) -> GroupChange:
    d = await core.request("group.add", {"group_id": group_id, "members": _members(members)})
    return to_group_change(d, group_id)


async def group_remove(core: ClientCore, group_id: str, endpoint_id: str) -> None:
    await core.request("group.remove", {"group_id": group_id, "endpoint_id": endpoint_id})


async def group_leave(core: ClientCore, group_id: str) -> None:
    await core.request("group.leave", {"group_id": group_id})


async def group_transfer(core: ClientCore, group_id: str, endpoint_id: str) -> None:
    await core.request("group.transfer", {"group_id": group_id, "endpoint_id": endpoint_id})


async def group_rename(core: ClientCore, group_id: str, name: str) -> None:
    await core.request("group.rename", {"group_id": group_id, "name": name})


async def group_dissolve(core: ClientCore, group_id: str) -> None:
    await core.request("group.dissolve", {"group_id": group_id})


async def group_list(core: ClientCore, cursor: str, limit: int) -> GroupSummaryPage:
    return to_group_list(await core.request("group.list", {"cursor": cursor, "limit": limit}))


async def group_get(core: ClientCore, group_id: str, cursor: str, limit: int) -> GroupDetails:
    return to_group_details(
        await core.request("group.get", {"group_id": group_id, "cursor": cursor, "limit": limit})
    )
