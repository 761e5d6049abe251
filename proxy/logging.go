package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// Log relay limits: an upstream may send logMsgBurst messages at once and
// logMsgRate a second after that; the rest are dropped and counted.
const (
	logMsgBurst = 20
	logMsgRate  = 10
	logTextMax  = 4096 // bytes of one string field, after escaping
)

// logBucket rate-limits one upstream's log messages.
type logBucket struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	dropped int
}

// take reports whether a message may pass now, and how many were dropped
// since the last one that passed.
func (b *logBucket) take(now time.Time) (ok bool, dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = logMsgBurst
	} else {
		b.tokens = min(logMsgBurst, b.tokens+now.Sub(b.last).Seconds()*logMsgRate)
	}
	b.last = now
	if b.tokens < 1 {
		b.dropped++
		return false, 0
	}
	b.tokens--
	dropped, b.dropped = b.dropped, 0
	return true, dropped
}

// relayLog passes an upstream's notifications/message to the hosts: its
// text escaped (no terminal escapes, bidi or invisible characters), long
// strings cut, the logger named after the server, at most logMsgRate a
// second, and only at or above the level the host asked for.
func (p *Proxy) relayLog(u *upstream, params json.RawMessage) {
	var m struct {
		Level  mcp.LoggingLevel `json:"level"`
		Logger string           `json:"logger"`
		Data   json.RawMessage  `json:"data"`
	}
	if err := json.Unmarshal(params, &m); err != nil {
		u.log.Debug("upstream log message not relayed: not a log message", "err", err)
		return
	}
	p.logMu.Lock()
	minLevel := p.logLevel
	p.logMu.Unlock()
	if minLevel != "" && !m.Level.ShouldSendTo(minLevel) {
		return
	}
	ok, dropped := u.logs.take(time.Now())
	if !ok {
		return
	}
	if dropped > 0 {
		p.log.Warn("upstream log messages dropped (rate limit)", "server", u.name, "dropped", dropped)
	}
	logger := u.name
	if m.Logger != "" {
		logger += "/" + safetext.Show(m.Logger, 128)
	}
	data, err := sanitizeJSON(m.Data)
	if err != nil {
		u.log.Debug("upstream log message not relayed: its data is not JSON", "err", err)
		return
	}
	out := map[string]any{
		"level":  m.Level,
		"logger": logger,
		"data":   data,
	}
	raw, ok := logParams(params, logger, m.Data, data)
	if !ok {
		// members the spec does not define: rebuilt from what it does
		var err error
		if raw, err = json.Marshal(mcp.NotificationParams{AdditionalFields: out}); err != nil {
			u.log.Debug("upstream log message not relayed", "err", err)
			return
		}
	}
	p.broadcast("notifications/message", raw)
}

// logParams is what the hosts get of a server's log params when they can
// be its own bytes: no member but level, logger and data; logger set to
// logger (the server's name first) in place, or added at the end; data
// replaced in place by clean only if escaping changed a string of it.
func logParams(params json.RawMessage, logger string, data, clean json.RawMessage) (json.RawMessage, bool) {
	names, ok := memberNames(params)
	if !ok {
		return nil, false
	}
	for _, n := range names {
		if n != "level" && n != "logger" && n != "data" {
			return nil, false
		}
	}
	out, _, err := oneLine(params)
	if err != nil {
		return nil, false
	}
	if out, ok = setMember(out, "logger", jsonString(logger)); !ok {
		return nil, false
	}
	if len(data) > 0 && needsEscape(data) {
		if out, ok = replaceMember(out, "data", clean); !ok {
			return nil, false
		}
	}
	return out, true
}

// sanitizeJSON escapes every string (member names too) of a JSON value,
// keeping everything else as the server wrote it: member order, numbers.
func sanitizeJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return json.RawMessage("null"), nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var out bytes.Buffer
	enc := jsontext.NewEncoder(&out, jsontext.AllowDuplicateNames(true))
	for {
		tok, err := dec.ReadToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if tok.Kind() == '"' {
			limit := logTextMax
			if isName(dec) {
				limit = 256
			}
			tok = jsontext.String(safetext.Show(tok.String(), limit))
		}
		if err := enc.WriteToken(tok); err != nil {
			return nil, err
		}
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// isName reports whether the string token dec just read is a member name.
func isName(dec *jsontext.Decoder) bool {
	kind, length := dec.StackIndex(dec.StackDepth())
	return kind == '{' && length%2 == 1
}

// setLogLevel records the level a host asked for and passes it on to every
// connected upstream that logs.
func (p *Proxy) setLogLevel(ctx context.Context, level mcp.LoggingLevel) {
	p.logMu.Lock()
	p.logLevel = level
	p.logMu.Unlock()
	params, _ := json.Marshal(map[string]any{"level": level})
	p.mu.RLock()
	ups := make([]*upstream, 0, len(p.ups))
	for _, u := range p.ups {
		if u.HasLogging() {
			ups = append(ups, u)
		}
	}
	p.mu.RUnlock()
	for _, u := range ups {
		go func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, err := u.Call(cctx, "logging/setLevel", params); err != nil {
				u.log.Warn("logging/setLevel not passed on", "err", err)
			}
		}()
	}
}

// setLevel answers logging/setLevel: the host session's level, which every
// upstream that logs is told too. A 2026-07-28 host names its level in
// each request's _meta instead.
func (p *Proxy) setLevel(ctx context.Context, r *hostRequest) (json.RawMessage, error) {
	if r.modern {
		return nil, removed(r.Method)
	}
	var ps struct {
		Level mcp.LoggingLevel `json:"level"`
	}
	if err := readParams(r, &ps); err != nil {
		return nil, err
	}
	switch ps.Level {
	case mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice, mcp.LoggingLevelWarning,
		mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency:
	default:
		return nil, &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("invalid logging level %q", ps.Level)}
	}
	if c := connOf(ctx); c == nil || !c.peer().isInitialized() {
		return nil, &rpcError{mcp.INVALID_REQUEST, "logging/setLevel before the session is initialized"}
	}
	p.setLogLevel(ctx, ps.Level)
	return json.RawMessage(`{}`), nil
}
