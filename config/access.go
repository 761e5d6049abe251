package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Access is what mcp-guard does with one kind of request a server makes
// of the host (sampling or elicitation).
type Access int

const (
	AccessDeny  Access = iota // refused, and not offered (the default)
	AccessAllow               // relayed to the host
	AccessAsk                 // relayed once the operator approves it
)

// ClientAccess is allow_sampling or allow_elicitation: true (or "allow"),
// false (or "deny", the default) or "ask". The decoder keeps the value as
// written; Parse checks it, located, and fills in Access.
type ClientAccess struct {
	raw    any
	Access Access
}

// UnmarshalTOML keeps the value as written for Parse to check.
func (a *ClientAccess) UnmarshalTOML(v any) error {
	a.raw = v
	return nil
}

// check resolves the value as written, or says why it cannot be used.
func (a *ClientAccess) check() error {
	switch a.raw {
	case nil, false, "deny":
		a.Access = AccessDeny
	case true, "allow":
		a.Access = AccessAllow
	case "ask":
		a.Access = AccessAsk
	default:
		if s, ok := a.raw.(string); ok {
			return fmt.Errorf("%q: want true, false, \"allow\", \"ask\" or \"deny\"", s)
		}
		return fmt.Errorf("want true, false, \"allow\", \"ask\" or \"deny\", got %s", tomlType(a.raw))
	}
	return nil
}

// checkRoots turns each configured root into an absolute file:// URI (a
// path, ~ and $XDG_* expanded, becomes one) and refuses anything else.
func checkRoots(at string, s *ServerConfig, env EnvFunc, add func(string, ...any)) {
	for i, r := range s.Roots {
		if !strings.Contains(r, "://") {
			p, err := ExpandPath(r, env)
			if err != nil {
				add("%s.roots[%d]: %v", at, i+1, err)
				continue
			}
			s.Roots[i] = (&url.URL{Scheme: "file", Path: p}).String()
			continue
		}
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "file" || u.Host != "" || !strings.HasPrefix(u.Path, "/") || u.RawQuery != "" || u.Fragment != "" {
			add("%s.roots[%d]: %q: want a file:///absolute/path URI or a path", at, i+1, r)
		}
	}
}
