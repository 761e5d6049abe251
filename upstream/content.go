package upstream

import "encoding/json"

// parseContentCaps reads what the server offers besides tools from its
// initialize result.
func parseContentCaps(initResult json.RawMessage) ContentCaps {
	var r struct {
		Capabilities struct {
			Prompts   json.RawMessage `json:"prompts"`
			Resources json.RawMessage `json:"resources"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(initResult, &r) != nil {
		return ContentCaps{}
	}
	present := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	c := ContentCaps{Prompts: present(r.Capabilities.Prompts), Resources: present(r.Capabilities.Resources)}
	if c.Resources {
		var res struct {
			Subscribe bool `json:"subscribe"`
		}
		_ = json.Unmarshal(r.Capabilities.Resources, &res)
		c.Subscribe = res.Subscribe
	}
	return c
}

// contentNotify takes the notifications about prompts and resources; it
// runs on the read loop and never blocks. A list_changed is handled as the
// tools' one is (the supervisor lists everything again); a resources/updated
// URI is queued on Updated. It reports whether it took the
// notification.
func (u *Client) contentNotify(method string, params json.RawMessage) bool {
	switch method {
	case "notifications/prompts/list_changed", "notifications/resources/list_changed":
		select {
		case u.listChanged <- struct{}{}:
		default: // one is already pending
		}
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(params, &p) != nil || p.URI == "" {
			return true
		}
		select {
		case u.updated <- p.URI:
		default:
			u.log.Warn("resources/updated dropped: too many waiting to be relayed", "uri", truncate(p.URI, 200))
		}
	default:
		return false
	}
	return true
}
