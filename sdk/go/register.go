package nixmsg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// registerClient makes one-shot requests: registration is rare, so no idle connection is kept
// for a server that may close it in the meantime.
var registerClient = &http.Client{Transport: &http.Transport{
	Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true, ForceAttemptHTTP2: false,
}}

// Register registers a new endpoint with a registration code over HTTP (spec 6.9); no
// connection is needed. serverURL is the connection URL; the HTTP address is derived from it.
// A generated login password is returned once and not kept by the SDK.
//
//	r, err := nixmsg.Register(ctx, "wss://relay.example/mqtt", "code-from-admin",
//		nixmsg.RegisterOptions{Name: "Front door"})
func Register(ctx context.Context, serverURL, registrationCode string, o RegisterOptions) (RegisterResult, error) {
	target, err := RegisterURL(serverURL)
	if err != nil {
		return RegisterResult{}, err
	}
	payload, _ := marshalJSON(map[string]string{
		"registration_code": registrationCode, "id": o.ID, "login_password": o.LoginPassword,
		"name": o.Name, "talk_password": o.TalkPassword,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return RegisterResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := registerClient.Do(req)
	if err != nil {
		return RegisterResult{}, &Error{Code: CodeNetwork, Message: "Registration request failed: " + err.Error(), Err: err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var body struct {
		Ok   bool `json:"ok"`
		Data struct {
			ID            string `json:"id"`
			LoginPassword string `json:"login_password"`
		} `json:"data"`
		Error *struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Data    map[string]any `json:"data"`
		} `json:"error"`
	}
	if err != nil || json.Unmarshal(raw, &body) != nil {
		return RegisterResult{}, &Error{Code: CodeBadResponse, Status: res.StatusCode,
			Message: fmt.Sprintf("Registration answered HTTP %d without JSON", res.StatusCode)}
	}
	if body.Ok && body.Data.ID != "" {
		return RegisterResult{ID: body.Data.ID, LoginPassword: body.Data.LoginPassword}, nil
	}
	e := &Error{Code: CodeBadResponse, Message: CodeBadResponse, Status: res.StatusCode}
	if body.Error != nil && body.Error.Code != "" {
		e.Code, e.Message, e.Data = body.Error.Code, firstNonEmpty(body.Error.Message, body.Error.Code), body.Error.Data
	}
	return RegisterResult{}, e
}
