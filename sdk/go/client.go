package nixmsg

import (
	"context"
	"encoding/json"
)

// Recall recalls a sent message (spec 6.4).
func (c *Client) Recall(ctx context.Context, id string) (RecallResult, error) {
	d, err := c.request(ctx, "recall", map[string]any{"id": id})
	if err != nil {
		return RecallResult{}, err
	}
	return toRecall(d)
}

// Status returns the state of a sent message with one page of its recipients (spec 6.4).
func (c *Client) Status(ctx context.Context, id string, page ListOptions) (StatusResult, error) {
	d, err := c.request(ctx, "status", map[string]any{"id": id, "cursor": page.Cursor, "limit": page.limit()})
	if err != nil {
		return StatusResult{}, err
	}
	return toStatus(d)
}

// Unlock proves the talk password of endpointID so that later sends need none (spec 6.6).
func (c *Client) Unlock(ctx context.Context, endpointID, talkPassword string) error {
	_, err := c.request(ctx, "unlock", map[string]any{"endpoint_id": endpointID, "talk_password": talkPassword})
	return err
}

// Ack acks a message in manual mode (spec 6.3) and waits for the server's answer. When it
// cannot be sent now, the message is acked when the server pushes it again after the reconnect.
// An ack that finds the delivery already final is reported to OnRevoked.
// After Close, or once the client stopped for good, it fails with that error ("closed", …).
func (c *Client) Ack(ctx context.Context, m Message) error {
	if err := c.stopError(); err != nil {
		return err
	}
	done := make(chan struct{})
	c.spawn(func() {
		c.recv.manualAck(m.From, m.ID)
		close(done)
	})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctxError(ctx, "Ack", nil)
	}
}

// Presence returns the online state of up to 200 endpoints (spec 6.5).
func (c *Client) Presence(ctx context.Context, ids []string) ([]PresenceInfo, error) {
	d, err := c.request(ctx, "presence.get", map[string]any{"ids": nonNil(ids)})
	if err != nil {
		return nil, err
	}
	return toPresenceList(d)
}

// Directory returns one page of the endpoint directory, by id; query matches an id prefix or a
// name ("" lists all, spec 6.5).
func (c *Client) Directory(ctx context.Context, query string, page ListOptions) (Page[DirectoryEntry], error) {
	d, err := c.request(ctx, "directory.list", map[string]any{"cursor": page.Cursor, "limit": page.limit(), "query": query})
	if err != nil {
		return Page[DirectoryEntry]{}, err
	}
	return toDirectory(d)
}

// WatchPresence subscribes to presence notices of ids, replacing the previous call (spec 6.5);
// an empty list stops watching. The server forgets it when the connection drops, so the client
// sends it again after each reconnect.
func (c *Client) WatchPresence(ctx context.Context, ids []string) error {
	return c.watch(ctx, map[string]any{"ids": nonNil(ids), "all": false})
}

// WatchAllPresence subscribes to presence notices of every endpoint (spec 6.5).
func (c *Client) WatchAllPresence(ctx context.Context) error {
	return c.watch(ctx, map[string]any{"ids": []string{}, "all": true})
}

func (c *Client) watch(ctx context.Context, w map[string]any) error {
	if _, err := c.request(ctx, "presence.watch", w); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w["all"] == true || len(w["ids"].([]string)) > 0 {
		c.watching = w
	} else {
		c.watching = nil
	}
	return nil
}

func nonNil(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// Self returns this endpoint's profile (spec 6.6).
func (c *Client) Self(ctx context.Context) (SelfInfo, error) {
	d, err := c.request(ctx, "self.get", map[string]any{})
	if err != nil {
		return SelfInfo{}, err
	}
	return toSelf(d)
}

// UpdateSelf changes the name and/or the default delay (spec 6.6).
func (c *Client) UpdateSelf(ctx context.Context, u SelfUpdate) error {
	fields := map[string]any{}
	if u.Name != nil {
		fields["name"] = *u.Name
	}
	if u.DefaultDelayMs != nil {
		fields["default_delay_ms"] = *u.DefaultDelayMs
	}
	_, err := c.request(ctx, "self.update", fields)
	return err
}

// SetTalkPassword sets the talk password; "" clears it. Earlier grants stop working (spec 6.6).
func (c *Client) SetTalkPassword(ctx context.Context, talkPassword string) error {
	_, err := c.request(ctx, "self.talk_password", map[string]any{"talk_password": talkPassword})
	return err
}

// ChangeLoginPassword changes the login password (spec 6.6). The server issues a new session
// token, which is passed to OnSession and used for reconnects; the old one stops working.
func (c *Client) ChangeLoginPassword(ctx context.Context, oldPassword, newPassword string) error {
	d, err := c.request(ctx, "self.login_password", map[string]any{"old_password": oldPassword, "new_password": newPassword})
	if err != nil {
		return err
	}
	var r struct {
		SessionToken string `json:"session_token"`
	}
	if json.Unmarshal(d, &r) == nil && r.SessionToken != "" {
		c.useToken(r.SessionToken)
	}
	return nil
}

// Logout invalidates the session token on the server and stops for good (spec 6.6); pending
// sends fail with "closed" and the state becomes offline with reason "logout".
func (c *Client) Logout(ctx context.Context) error {
	if err := c.stopError(); err != nil {
		return err
	}
	// The server closes the connection after its response: that close must not reconnect.
	return c.stopWith(ctx, stopCause{state: StateOffline, reason: "logout"}, func() error {
		_, err := c.request(ctx, "self.logout", map[string]any{})
		return err
	})
}
