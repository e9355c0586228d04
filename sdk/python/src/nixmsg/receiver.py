"""The receiving rules of spec 9 ("接收") and spec 6.4 (``revoked``): dedup by from + id,
serial callbacks, acks in auto or manual mode, receipts deduped by ``receipt_id`` and acked."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Literal

from .dedup import DedupCache, message_key
from .listeners import Dispatcher, Listeners
from .types import GroupEvent, Message, PresenceEvent, Receipt, Revoked

#: Where a received message stands.
_MsgState = Literal["queued", "delivered", "acked", "revoked"]


class Receiver:
    """Lives on the client's event loop.

    ``send_ack(sender, id)`` sends ``ack`` and returns ``data.result``, or None when it could not
    be sent or answered (the server pushes the message again and it is acked again then).
    ``send_receipt_ack(receipt_id)`` sends ``receipt_ack``, best effort.

    Example::

        receiver = Receiver(loop, dispatcher, "auto", 10_000, send_ack, send_receipt_ack)
        receiver.messages.add(print)
        receiver.message(msg)  # delivered once, acked after the callback returns
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        dispatcher: Dispatcher,
        ack_mode: Literal["auto", "manual"],
        dedup_capacity: int,
        send_ack: Callable[[str, str], Awaitable[str | None]],
        send_receipt_ack: Callable[[str], None],
        on_error: Callable[[BaseException], None],
    ) -> None:
        self.messages: Listeners[Message] = Listeners(loop)
        self.receipts: Listeners[Receipt] = Listeners(loop)
        self.revoked: Listeners[Revoked] = Listeners(loop)
        self.presence: Listeners[PresenceEvent] = Listeners(loop)
        self.group_events: Listeners[GroupEvent] = Listeners(loop)
        self._d = dispatcher
        self._ack_mode = ack_mode
        self._send_ack = send_ack
        self._send_receipt_ack = send_receipt_ack
        self._on_error = on_error
        self._seen: DedupCache[_MsgState] = DedupCache(dedup_capacity)
        self._receipts_seen: DedupCache[Literal["handling", "done"]] = DedupCache(dedup_capacity)
        self._held: list[tuple[Message, str]] = []
        self._held_wait: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: Set when close begins: messages not handed to the application yet stay unacked (the
        #: server pushes them again at the next login); nothing new reaches the callbacks.
        self.closing = False

    @property
    def tasks(self) -> set[asyncio.Task[None]]:
        """Acks in flight; close waits for them (checklist 17a)."""
        return self._tasks

    def release(self) -> None:
        """The client has stopped: drop held messages and the wait for a callback."""
        self._held.clear()
        if self._held_wait is not None:
            self._held_wait.cancel()
            self._held_wait = None

    def _spawn(self, coro: Awaitable[None]) -> None:
        async def wrap() -> None:
            await coro

        task = asyncio.get_running_loop().create_task(wrap())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def message(self, msg: Message) -> None:
        """A ``msg`` arrived (spec 6.3, 9)."""
        if self.closing:
            return
        key = message_key(msg.sender, msg.id)
        state = self._seen.get(key)
        if state == "acked":
            # The earlier ack may have been lost; without a new one the server pushes forever.
            self._spawn(self._ack(msg.sender, msg.id))
            return
        if state is not None:
            return  # queued, delivered but not acked, or revoked
        self._seen.set(key, "queued")
        self._enqueue(msg, key)

    def _enqueue(self, msg: Message, key: str) -> None:
        async def task() -> None:
            if self._seen.get(key) == "revoked" or self.closing:
                return  # withdrawn before the application saw it, or closing
            if len(self.messages) == 0:
                self._hold(msg, key)
                return
            self._seen.set(key, "delivered")
            try:
                await self._d.run(self.messages, msg)
            except Exception as err:  # noqa: BLE001 - application code
                self._on_error(err)
                # No ack: forget it, so that the server's next push is processed again.
                if self._seen.get(key) == "delivered":
                    self._seen.delete(key)
                return
            if self._ack_mode == "auto" and self._seen.get(key) == "delivered":
                self._seen.set(key, "acked")
                self._spawn(self._ack(msg.sender, msg.id))

        self._d.serial(task)

    def _hold(self, msg: Message, key: str) -> None:
        # Without an on_message callback, messages wait (unacked) without blocking other events.
        self._held.append((msg, key))
        if len(self._held) > 1:
            return

        def release(f: asyncio.Future[None]) -> None:
            self._held_wait = None
            if f.cancelled():
                return
            held, self._held = self._held, []
            for m, k in held:
                self._enqueue(m, k)

        self._held_wait = self.messages.when_any()
        self._held_wait.add_done_callback(release)

    async def ack(self, sender: str, message_id: str) -> None:
        """Acks a message the application has handled (manual mode). A revoked message is not
        acked. When the ack cannot be sent now, the next push of the message is acked at once."""
        key = message_key(sender, message_id)
        if self._seen.get(key) == "revoked":
            return
        self._seen.set(key, "acked")
        await self._ack(sender, message_id)

    async def _ack(self, sender: str, message_id: str) -> None:
        result = await self._send_ack(sender, message_id)
        # spec 9: an ack whose result is not ``accepted`` counts as ``revoked``.
        if result is not None and result != "accepted":
            revoked = Revoked(id=message_id, sender=sender, reason=result)

            async def task() -> None:
                await self._d.run(self.revoked, revoked)

            self._d.serial(task)

    def revoke(self, frame: Revoked) -> None:
        """A ``revoked`` frame arrived (spec 6.4)."""
        key = message_key(frame.sender, frame.id)
        state = self._seen.get(key)
        if state == "queued":
            self._seen.set(key, "revoked")  # dropped when its turn comes
        elif state == "delivered":
            self._seen.set(key, "revoked")  # not acked any more; tell the application

            async def task() -> None:
                await self._d.run(self.revoked, frame)

            self._d.serial(task)
        # acked, revoked or unknown: nothing to do.

    def receipt(self, r: Receipt) -> None:
        """A ``receipt`` arrived (spec 6.4): deduped by ``receipt_id``, always acked."""
        state = self._receipts_seen.get(r.receipt_id)
        if state == "done":
            self._send_receipt_ack(r.receipt_id)
            return
        if state == "handling":
            return
        self._receipts_seen.set(r.receipt_id, "handling")

        async def task() -> None:
            try:
                await self._d.run(self.receipts, r)
            except Exception as err:  # noqa: BLE001 - application code
                self._on_error(err)
                self._receipts_seen.delete(r.receipt_id)
                return
            self._receipts_seen.set(r.receipt_id, "done")
            self._send_receipt_ack(r.receipt_id)

        self._d.serial(task)

    def presence_event(self, e: PresenceEvent) -> None:
        """A ``presence`` notice (spec 6.5), best effort, no ack."""
        self._d.emit(self.presence, e)

    def group_event(self, e: GroupEvent) -> None:
        """A ``group_event`` (spec 6.7), best effort, no ack."""
        self._d.emit(self.group_events, e)
