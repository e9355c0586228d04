"""Every error code a :class:`nixmsg.NixMsgError` can carry: the server's (spec 6.10) and the
SDK's own. Branch on these constants rather than on string literals.

Example::

    try:
        client.send("door-1", "open")
    except nixmsg.NixMsgError as err:
        if err.code == nixmsg.codes.TALK_PASSWORD_REQUIRED:
            client.unlock("door-1", input("Talk password: "))
"""

from __future__ import annotations

# --- the server's codes (spec 6.10) -------------------------------------------------------------

#: A field is invalid; also a configuration or argument error the SDK finds locally.
BAD_REQUEST = "bad_request"
#: The request came before the handshake.
NOT_READY = "not_ready"
#: An identity check failed (a wrong old password …).
UNAUTHORIZED = "unauthorized"
#: Not allowed (not the group owner …).
FORBIDDEN = "forbidden"
#: The message, group or queried id does not exist.
NOT_FOUND = "not_found"
#: The send target does not exist.
INVALID_TARGET = "invalid_target"
#: The same message id with different content.
CONFLICT = "conflict"
#: The id exists already (registration, provisioning, group creation).
ID_TAKEN = "id_taken"
#: The body is over ``max_body_bytes`` (also checked locally).
BODY_TOO_LARGE = "body_too_large"
#: ``meta`` is over ``max_meta_bytes`` (also checked locally).
META_TOO_LARGE = "meta_too_large"
#: The frame is over ``max_frame_bytes``; produced by the SDK only.
FRAME_TOO_LARGE = "frame_too_large"
#: The response is over this connection's ``max_receive_bytes``: ask for a smaller page.
RESPONSE_TOO_LARGE = "response_too_large"
#: The recipient needs a talk password.
TALK_PASSWORD_REQUIRED = "talk_password_required"
#: The talk password is wrong.
TALK_PASSWORD_INVALID = "talk_password_invalid"
#: Too many requests, or locked for a while after wrong passwords.
RATE_LIMITED = "rate_limited"
#: Not a member of the group.
NOT_MEMBER = "not_member"
#: The group owner cannot leave.
OWNER_CANNOT_LEAVE = "owner_cannot_leave"
#: The group has its maximum of members.
GROUP_FULL = "group_full"
#: This endpoint has ``max_pending_per_sender`` unfinished messages.
QUOTA_EXCEEDED = "quota_exceeded"
#: The recipient is disabled.
ENDPOINT_DISABLED = "endpoint_disabled"
#: Registration is off (registration API only).
REGISTRATION_CLOSED = "registration_closed"
#: Wrong registration code (registration API only).
REGISTRATION_CODE_INVALID = "registration_code_invalid"
#: The server is overloaded; retry later.
BUSY = "busy"

# --- the SDK's own codes --------------------------------------------------------------------------

#: The call needs a completed handshake, or the connection was lost before the response.
NOT_CONNECTED = "not_connected"
#: The in-memory send queue is full.
QUEUE_FULL = "queue_full"
#: No answer within the bound (a request timeout, or ``ready(timeout=…)``).
TIMEOUT = "timeout"
#: The client was closed or logged out.
CLOSED = "closed"
#: Taken over by another login, or a ``fatal`` from the server (``reason`` says which).
KICKED = "kicked"
#: The server refused the credential (``reason``: ``bad_credentials`` or ``session_invalid``).
AUTH_FAILED = "auth_failed"
#: A connection or HTTP request failed (the cause is in ``__cause__``: refused, DNS, TLS …).
NETWORK = "network"
#: The server answered something that is not a NixMsg response.
BAD_RESPONSE = "bad_response"

#: The codes of spec 6.10.
SERVER_CODES = frozenset(
    {
        BAD_REQUEST, NOT_READY, UNAUTHORIZED, FORBIDDEN, NOT_FOUND, INVALID_TARGET, CONFLICT,
        ID_TAKEN, BODY_TOO_LARGE, META_TOO_LARGE, FRAME_TOO_LARGE, RESPONSE_TOO_LARGE,
        TALK_PASSWORD_REQUIRED, TALK_PASSWORD_INVALID, RATE_LIMITED, NOT_MEMBER,
        OWNER_CANNOT_LEAVE, GROUP_FULL, QUOTA_EXCEEDED, ENDPOINT_DISABLED, REGISTRATION_CLOSED,
        REGISTRATION_CODE_INVALID, BUSY,
    }
)  # fmt: skip
#: The codes the SDK produces itself.
SDK_CODES = frozenset(
    {NOT_CONNECTED, QUEUE_FULL, TIMEOUT, CLOSED, KICKED, AUTH_FAILED, NETWORK, BAD_RESPONSE}
)
#: Every code a :class:`nixmsg.NixMsgError` can carry.
ALL_CODES = SERVER_CODES | SDK_CODES
