"""``nixmsg``: the Python SDK of NixMsg (spec 9).

Example::

    import nixmsg

    client = nixmsg.NixMsgClient.connect("wss://relay.example/mqtt", "door-1", password=pw)
    client.on_message(lambda msg: print(msg.sender, msg.body))
    client.ready(timeout=30)
    client.send("app-1", "hello")
    client.close()
"""

from . import codes
from .aio import AsyncNixMsgClient
from .client import NixMsgClient
from .core import CLIENT_NAME, CLOSE_TIMEOUT
from .errors import (
    ConfigError,
    LimitError,
    NetworkError,
    NixMsgError,
    NotConnectedError,
    RequestTimeoutError,
    ServerError,
    StoppedError,
)
from .register import register
from .types import (
    ConnectionEvent,
    ConnectionState,
    ConnectOptions,
    DeliveryStatus,
    DirectoryEntry,
    DirectoryPage,
    GroupChange,
    GroupDetails,
    GroupEvent,
    GroupMember,
    GroupMemberFailure,
    GroupMemberInput,
    GroupSummary,
    GroupSummaryPage,
    Message,
    PresenceEvent,
    PresenceInfo,
    Receipt,
    RecallResult,
    RegisterResult,
    Revoked,
    SelfInfo,
    SendResult,
    ServerInfo,
    StatusResult,
    Target,
)
from .url import connection_address, register_url
from .webhook import sign_webhook, verify_webhook

__version__ = "0.1.0"

__all__ = [
    "CLIENT_NAME",
    "CLOSE_TIMEOUT",
    "ConfigError",
    "AsyncNixMsgClient",
    "ConnectOptions",
    "ConnectionEvent",
    "ConnectionState",
    "DeliveryStatus",
    "DirectoryEntry",
    "DirectoryPage",
    "GroupChange",
    "GroupDetails",
    "GroupEvent",
    "GroupMember",
    "GroupMemberFailure",
    "GroupMemberInput",
    "GroupSummary",
    "GroupSummaryPage",
    "LimitError",
    "Message",
    "NetworkError",
    "NixMsgClient",
    "NixMsgError",
    "NotConnectedError",
    "PresenceEvent",
    "PresenceInfo",
    "Receipt",
    "RecallResult",
    "RegisterResult",
    "RequestTimeoutError",
    "Revoked",
    "SelfInfo",
    "SendResult",
    "ServerError",
    "ServerInfo",
    "StatusResult",
    "StoppedError",
    "Target",
    "connection_address",
    "register",
    "codes",
    "register_url",
    "sign_webhook",
    "verify_webhook",
]
