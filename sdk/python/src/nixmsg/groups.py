"""The group requests of spec 6.7, one method per frame type, for both clients."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from . import calls
from .calls import MemberArg
from .core import ClientCore
from .types import GroupChange, GroupDetails, GroupSummaryPage

T = TypeVar("T")
Runner = Callable[[Coroutine[Any, Any, T]], T]


class GroupApi:
    """Group operations of a connected client (``client.groups``). The creator becomes owner
    and member; members that cannot be added are listed in ``failed`` (spec 6.7).

    Example::

        created = client.groups.create("Floor 1", ["door-1", GroupMemberInput("door-2", "secret")])
        client.send(Target.group(created.group_id), "hello all")
    """

    def __init__(self, run: Callable[[Coroutine[Any, Any, Any]], Any], core: ClientCore) -> None:
        self._run = run
        self._core = core

    def create(self, name: str, members: Sequence[MemberArg] = (), *, id: str = "") -> GroupChange:  # noqa: A002
        """``group.create``: ``id`` empty lets the server choose (``g_…``)."""
        result: GroupChange = self._run(calls.group_create(self._core, name, members, id))
        return result

    def add(self, group_id: str, members: Sequence[MemberArg]) -> GroupChange:
        """``group.add``: adds members; the ones that fail are listed with their code."""
        result: GroupChange = self._run(calls.group_add(self._core, group_id, members))
        return result

    def remove(self, group_id: str, endpoint_id: str) -> None:
        """``group.remove``: the owner removes a member."""
        self._run(calls.group_remove(self._core, group_id, endpoint_id))

    def leave(self, group_id: str) -> None:
        """``group.leave``: the owner must transfer first (``owner_cannot_leave``)."""
        self._run(calls.group_leave(self._core, group_id))

    def transfer(self, group_id: str, endpoint_id: str) -> None:
        """``group.transfer``: makes another member the owner."""
        self._run(calls.group_transfer(self._core, group_id, endpoint_id))

    def rename(self, group_id: str, name: str) -> None:
        """``group.rename``."""
        self._run(calls.group_rename(self._core, group_id, name))

    def dissolve(self, group_id: str) -> None:
        """``group.dissolve``: pending group messages are rejected with ``group_dissolved``."""
        self._run(calls.group_dissolve(self._core, group_id))

    def list(self, cursor: str = "", limit: int = 100) -> GroupSummaryPage:
        """``group.list``: the groups this endpoint is a member of, one page at a time."""
        result: GroupSummaryPage = self._run(calls.group_list(self._core, cursor, limit))
        return result

    def get(self, group_id: str, cursor: str = "", limit: int = 100) -> GroupDetails:
        """``group.get``: the group and one page of its members."""
        result: GroupDetails = self._run(calls.group_get(self._core, group_id, cursor, limit))
        return result


class AsyncGroupApi:
    """:class:`GroupApi` as coroutines (``async_client.groups``)."""

    def __init__(self, core: ClientCore) -> None:
        self._core = core

    async def create(self, name: str, members: Sequence[MemberArg] = (), *, id: str = "") -> GroupChange:  # noqa: A002
        return await calls.group_create(self._core, name, members, id)

    async def add(self, group_id: str, members: Sequence[MemberArg]) -> GroupChange:
        return await calls.group_add(self._core, group_id, members)

    async def remove(self, group_id: str, endpoint_id: str) -> None:
        await calls.group_remove(self._core, group_id, endpoint_id)

    async def leave(self, group_id: str) -> None:
        await calls.group_leave(self._core, group_id)

    async def transfer(self, group_id: str, endpoint_id: str) -> None:
        await calls.group_transfer(self._core, group_id, endpoint_id)

    async def rename(self, group_id: str, name: str) -> None:
        await calls.group_rename(self._core, group_id, name)

    async def dissolve(self, group_id: str) -> None:
        await calls.group_dissolve(self._core, group_id)

    async def list(self, cursor: str = "", limit: int = 100) -> GroupSummaryPage:
        return await calls.group_list(self._core, cursor, limit)

    async def get(self, group_id: str, cursor: str = "", limit: int = 100) -> GroupDetails:
        return await calls.group_get(self._core, group_id, cursor, limit)
