package nixmsg

import (
	"time"
)

// Target is where a message goes (spec 6.2): an endpoint or a group.
type Target struct {
	// Kind is "endpoint" or "group".
	Kind string `json:"kind"`
	// ID is the endpoint or group id.
	ID string `json:"id"`
}

// Endpoint returns the Target of endpoint id.
func Endpoint(id string) Target { return Target{Kind: "endpoint", ID: id} }

// Group returns the Target of group id (`g_…`).
func Group(id string) Target { return Target{Kind: "group", ID: id} }

// Credential is how a client logs in: the login password, or a session token saved from
// OnSession. Create it with Password or SessionToken.
type Credential struct {
	password string
	token    string
}

// Password returns a Credential that logs in with the login password.
func Password(password string) Credential { return Credential{password: password} }

// SessionToken returns a Credential that logs in with a session token (`nst_…`).
func SessionToken(token string) Credential { return Credential{token: token} }

// ConnectionState is a state reported to OnConnection (spec 9).
type ConnectionState string

// The connection states of spec 9.
const (
	StateConnecting   ConnectionState = "connecting"
	StateOnline       ConnectionState = "online"
	StateReconnecting ConnectionState = "reconnecting"
	StateOffline      ConnectionState = "offline"
	StateKicked       ConnectionState = "kicked"
	StateAuthFailed   ConnectionState = "auth_failed"
)

// ConnectionEvent is a connection state change.
type ConnectionEvent struct {
	State ConnectionState
	// Reason says why: for kicked, "taken_over" or the `fatal` reason (disabled, deleted,
	// password_reset, protocol); for auth_failed, "session_invalid" or "bad_credentials"; for
	// offline, "closed" or "logout"; for reconnecting, what ended the last attempt.
	Reason string
	// RetryIn is the delay before the next attempt, for reconnecting.
	RetryIn time.Duration
	// Err is the error pending calls were failed with, for kicked and auth_failed; for
	// reconnecting after a failed attempt, why it failed ("network" or "tls", the dial or TLS
	// error as its Err).
	Err *Error
}

// ServerInfo holds the limits and facts from the handshake response (spec 6.1).
type ServerInfo struct {
	ServerTimeMs       int64
	ServerVersion      string
	MaxBodyBytes       int
	MaxMetaBytes       int
	MaxFrameBytes      int
	MaxTTLSeconds      int64
	MaxScheduleSeconds int64
	AckTimeoutSeconds  int64
}

// MessageState is the state of a message (spec 7.1): "scheduled", "dispatched" or "completed".
type MessageState string

// DeliveryState is the state of one delivery (spec 7.1): "pending", "accepted", "recalled",
// "expired", "dropped" or "rejected".
type DeliveryState string

// SendResult is the server's answer to Send (spec 6.2).
type SendResult struct {
	ID       string
	SendAtMs int64
	State    MessageState
}

// RecallResult is the answer to Recall (spec 6.4).
type RecallResult struct {
	// Result is "recalled", "partial" or "failed".
	Result   string
	Recalled int
	Accepted int
	Other    int
}

// DeliveryStatus is one recipient's line in a StatusResult.
type DeliveryStatus struct {
	EndpointID string
	State      DeliveryState
	Reason     string
}

// StatusResult is the answer to Status (spec 6.4): the message and one page of recipients.
type StatusResult struct {
	ID    string
	State MessageState
	// Reason says why the message ended before dispatch ("" when dispatched normally).
	Reason   string
	SendAtMs int64
	// Counts holds the deliveries per state.
	Counts map[DeliveryState]int
	Items  []DeliveryStatus
	// NextCursor is passed to Status for the next page; "" on the last.
	NextCursor string
}

// Message is a received message (spec 6.3).
type Message struct {
	ID   string
	From string
	To   Target
	// Body holds the decoded bytes of the body.
	Body []byte
	// Binary is true when the body was sent as bytes (base64 on the wire), false for text.
	Binary      bool
	ContentType string
	Meta        map[string]any
	SendAtMs    int64
}

// Text returns the body as a string.
func (m Message) Text() string { return string(m.Body) }

// Receipt says what happened to a sent message at one recipient (spec 6.4).
type Receipt struct {
	ReceiptID string
	ID        string
	// EndpointID is "" for a message-level rejection.
	EndpointID string
	// State is "accepted", "expired", "dropped" or "rejected".
	State  DeliveryState
	Reason string
	AtMs   int64
}

// Revoked says a message handed to the application was withdrawn before it was acked (spec
// 6.4), or that its ack found the delivery already final (Reason is then that state, spec 9).
type Revoked struct {
	ID     string
	From   string
	Reason string
}

// PresenceEvent is an online or offline notice (spec 6.5).
type PresenceEvent struct {
	ID     string
	Online bool
	AtMs   int64
}

// GroupEvent is a change of a group this endpoint is in (spec 6.7). Event is one of
// member_added, member_removed, left, owner_changed, renamed, dissolved.
type GroupEvent struct {
	GroupID    string
	Event      string
	EndpointID string
	AtMs       int64
}

// RegisterOptions are the optional fields of Register (spec 6.9).
type RegisterOptions struct {
	// ID is the endpoint id; empty lets the server choose one.
	ID string
	// LoginPassword is the login password; empty lets the server generate one (returned once).
	LoginPassword string
	Name          string
	TalkPassword  string
}

// RegisterResult is the answer to Register.
type RegisterResult struct {
	ID string
	// LoginPassword is set only when the server generated it; shown this once.
	LoginPassword string
}

// SelfInfo is this endpoint's profile (spec 6.6).
type SelfInfo struct {
	ID              string
	Name            string
	Source          string
	DefaultDelayMs  int64
	TalkPasswordSet bool
	CreatedAtMs     int64
}

// SelfUpdate holds the fields UpdateSelf can change; nil fields stay as they are.
type SelfUpdate struct {
	Name           *string
	DefaultDelayMs *int64
}

// PresenceInfo is one entry of Presence (spec 6.5).
type PresenceInfo struct {
	ID     string
	Online bool
	// SinceMs is nil when unknown.
	SinceMs *int64
	// NotFound is true when the id is unknown.
	NotFound bool
}

// DirectoryEntry is one entry of Directory (spec 6.5).
type DirectoryEntry struct {
	ID              string
	Name            string
	Online          bool
	OnlineSinceMs   *int64
	OfflineSinceMs  *int64
	TalkPasswordSet bool
}

// Page is one page of results; pass NextCursor back for the next ("" on the last page).
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// GroupMemberInput is a member to add to a group, with its talk password when it has one.
type GroupMemberInput struct {
	ID           string
	TalkPassword string
}

// GroupMemberFailure is a member that could not be added, with the reason code (spec 6.7).
type GroupMemberFailure struct {
	ID   string
	Code string
}

// GroupChange is the answer to Groups.Create and Groups.Add.
type GroupChange struct {
	GroupID string
	// Added lists the members added by this call.
	Added []string
	// Failed lists the members that were not added, with the reason code.
	Failed []GroupMemberFailure
}

// GroupSummary is a group in Groups.List.
type GroupSummary struct {
	ID          string
	Name        string
	OwnerID     string
	MemberCount int
}

// GroupMember is a member in Groups.Get.
type GroupMember struct {
	ID     string
	Name   string
	Online bool
}

// GroupDetails is the answer to Groups.Get: the group and one page of members.
type GroupDetails struct {
	GroupSummary
	Members Page[GroupMember]
}
