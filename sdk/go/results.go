package nixmsg

import "encoding/json"

// Maps `resp.data` of the requests (spec 6.4–6.7) to the public types.

func decodeData(data json.RawMessage, v any) error {
	if len(data) == 0 || string(data) == "null" {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &Error{Code: CodeBadResponse, Message: "Cannot decode the response: " + err.Error(), Err: err}
	}
	return nil
}

func toRecall(data json.RawMessage) (RecallResult, error) {
	var d struct {
		Result                    string
		Recalled, Accepted, Other int
	}
	err := decodeData(data, &d)
	return RecallResult{Result: d.Result, Recalled: d.Recalled, Accepted: d.Accepted, Other: d.Other}, err
}

func toStatus(data json.RawMessage) (StatusResult, error) {
	var d struct {
		ID         string                `json:"id"`
		State      string                `json:"state"`
		Reason     string                `json:"reason"`
		SendAtMs   int64                 `json:"send_at_ms"`
		Counts     map[DeliveryState]int `json:"counts"`
		NextCursor string                `json:"next_cursor"`
		Items      []struct {
			EndpointID string `json:"endpoint_id"`
			State      string `json:"state"`
			Reason     string `json:"reason"`
		} `json:"items"`
	}
	if err := decodeData(data, &d); err != nil {
		return StatusResult{}, err
	}
	r := StatusResult{
		ID: d.ID, State: MessageState(d.State), Reason: d.Reason, SendAtMs: d.SendAtMs,
		Counts: d.Counts, NextCursor: d.NextCursor, Items: []DeliveryStatus{},
	}
	if r.Counts == nil {
		r.Counts = map[DeliveryState]int{}
	}
	for _, i := range d.Items {
		r.Items = append(r.Items, DeliveryStatus{EndpointID: i.EndpointID, State: DeliveryState(i.State), Reason: i.Reason})
	}
	return r, nil
}

func toSelf(data json.RawMessage) (SelfInfo, error) {
	var d struct {
		ID              string `json:"id"`
		Name            string `json:"name"`
		Source          string `json:"source"`
		DefaultDelayMs  int64  `json:"default_delay_ms"`
		TalkPasswordSet bool   `json:"talk_password_set"`
		CreatedAtMs     int64  `json:"created_at_ms"`
	}
	err := decodeData(data, &d)
	return SelfInfo(d), err
}

func toPresenceList(data json.RawMessage) ([]PresenceInfo, error) {
	var d struct {
		Items []struct {
			ID       string `json:"id"`
			Online   bool   `json:"online"`
			SinceMs  *int64 `json:"since_ms"`
			NotFound bool   `json:"not_found"`
		} `json:"items"`
	}
	if err := decodeData(data, &d); err != nil {
		return nil, err
	}
	out := make([]PresenceInfo, 0, len(d.Items))
	for _, i := range d.Items {
		out = append(out, PresenceInfo(i))
	}
	return out, nil
}

func toDirectory(data json.RawMessage) (Page[DirectoryEntry], error) {
	var d struct {
		Items []struct {
			ID              string `json:"id"`
			Name            string `json:"name"`
			Online          bool   `json:"online"`
			OnlineSinceMs   *int64 `json:"online_since_ms"`
			OfflineSinceMs  *int64 `json:"offline_since_ms"`
			TalkPasswordSet bool   `json:"talk_password_set"`
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	if err := decodeData(data, &d); err != nil {
		return Page[DirectoryEntry]{}, err
	}
	p := Page[DirectoryEntry]{Items: make([]DirectoryEntry, 0, len(d.Items)), NextCursor: d.NextCursor}
	for _, i := range d.Items {
		p.Items = append(p.Items, DirectoryEntry(i))
	}
	return p, nil
}

func toGroupChange(data json.RawMessage, groupID string) (GroupChange, error) {
	var d struct {
		GroupID string   `json:"group_id"`
		ID      string   `json:"id"`
		Added   []string `json:"added"`
		Failed  []struct {
			ID   string `json:"id"`
			Code string `json:"code"`
		} `json:"failed"`
	}
	if err := decodeData(data, &d); err != nil {
		return GroupChange{}, err
	}
	c := GroupChange{GroupID: firstNonEmpty(d.GroupID, d.ID, groupID), Added: d.Added, Failed: []GroupMemberFailure{}}
	if c.Added == nil {
		c.Added = []string{}
	}
	for _, f := range d.Failed {
		c.Failed = append(c.Failed, GroupMemberFailure(f))
	}
	return c, nil
}

type wireGroupSummary struct {
	ID          string `json:"id"`
	GroupID     string `json:"group_id"`
	Name        string `json:"name"`
	OwnerID     string `json:"owner_id"`
	MemberCount int    `json:"member_count"`
}

func (s wireGroupSummary) summary() GroupSummary {
	return GroupSummary{ID: firstNonEmpty(s.ID, s.GroupID), Name: s.Name, OwnerID: s.OwnerID, MemberCount: s.MemberCount}
}

func toGroupList(data json.RawMessage) (Page[GroupSummary], error) {
	var d struct {
		Items      []wireGroupSummary `json:"items"`
		NextCursor string             `json:"next_cursor"`
	}
	if err := decodeData(data, &d); err != nil {
		return Page[GroupSummary]{}, err
	}
	p := Page[GroupSummary]{Items: make([]GroupSummary, 0, len(d.Items)), NextCursor: d.NextCursor}
	for _, g := range d.Items {
		p.Items = append(p.Items, g.summary())
	}
	return p, nil
}

func toGroupDetails(data json.RawMessage) (GroupDetails, error) {
	var d struct {
		wireGroupSummary
		Group   *wireGroupSummary `json:"group"`
		Members []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Online bool   `json:"online"`
		} `json:"members"`
		NextCursor string `json:"next_cursor"`
	}
	if err := decodeData(data, &d); err != nil {
		return GroupDetails{}, err
	}
	g := d.wireGroupSummary
	if d.Group != nil {
		g = *d.Group
	}
	out := GroupDetails{GroupSummary: g.summary(), Members: Page[GroupMember]{Items: []GroupMember{}, NextCursor: d.NextCursor}}
	for _, m := range d.Members {
		out.Members.Items = append(out.Members.Items, GroupMember(m))
	}
	return out, nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
