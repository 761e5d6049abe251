package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// ItemKind is what a listing other than tools/list holds: prompts,
// resources or resource templates.
type ItemKind int

// The kinds of listed item.
const (
	Prompts ItemKind = iota + 1
	Resources
	Templates
)

// Method is the list request: "prompts/list", "resources/list" or
// "resources/templates/list".
func (k ItemKind) Method() string {
	switch k {
	case Prompts:
		return "prompts/list"
	case Resources:
		return "resources/list"
	case Templates:
		return "resources/templates/list"
	}
	return ""
}

// array is the member of the list result that holds the items.
func (k ItemKind) array() string {
	switch k {
	case Prompts:
		return "prompts"
	case Resources:
		return "resources"
	case Templates:
		return "resourceTemplates"
	}
	return ""
}

// KeyField is the member that identifies an item: "name", "uri" or
// "uriTemplate".
func (k ItemKind) KeyField() string {
	switch k {
	case Prompts:
		return "name"
	case Resources:
		return "uri"
	case Templates:
		return "uriTemplate"
	}
	return ""
}

// Noun is the item's kind as the operator reads it: "prompt", "resource"
// or "template".
func (k ItemKind) Noun() string {
	switch k {
	case Prompts:
		return "prompt"
	case Resources:
		return "resource"
	case Templates:
		return "template"
	}
	return ""
}

// ItemKinds are the listings besides tools, in the order they are listed.
func ItemKinds() [3]ItemKind { return [3]ItemKind{Prompts, Resources, Templates} }

// PinName is the name an item is pinned under beside its server's tools:
// "prompt:NAME", "resource:URI" or "template:URI-TEMPLATE". Tool names of
// that shape are reserved (see IsItemPinName).
func (k ItemKind) PinName(key string) string { return k.Noun() + ":" + key }

// IsItemPinName reports whether a name has the shape of a pin name that is
// not a tool's: an item's, or a sign-in's ("oauth:", ledger.IssuerPin). A
// tool so named would share its pin, so it is refused.
func IsItemPinName(name string) bool {
	for _, k := range ItemKinds() {
		if strings.HasPrefix(name, k.Noun()+":") {
			return true
		}
	}
	return strings.HasPrefix(name, "oauth:")
}

// Item is one prompt, resource or resource template as its upstream listed
// it. Raw holds the exact bytes of the object from the list result; Key is
// read from them.
type Item struct {
	Kind ItemKind
	Raw  json.RawMessage
	Key  string // the prompt's name, the resource's uri or the template's uriTemplate
}

// Digest is the SHA-256 of the item's raw bytes, in hex.
func (it Item) Digest() string {
	sum := sha256.Sum256(it.Raw)
	return hex.EncodeToString(sum[:])
}

// ItemPage is one list result split into its items.
type ItemPage struct {
	Items      []Item
	NextCursor string
}

// SplitItems splits the raw result of one prompts/list, resources/list or
// resources/templates/list call, keeping each item's exact bytes. It
// refuses a result that is not an object with the kind's array, and any
// item that is not an object with a non-empty string key.
func SplitItems(kind ItemKind, result []byte) (ItemPage, error) {
	var pg map[string]json.RawMessage
	if err := json.Unmarshal(result, &pg); err != nil {
		return ItemPage{}, fmt.Errorf("%s result: %w", kind.Method(), err)
	}
	rawItems, ok := pg[kind.array()]
	if !ok || isNull(rawItems) {
		return ItemPage{}, fmt.Errorf("%s result: no %q array", kind.Method(), kind.array())
	}
	var items []json.RawMessage
	if err := json.Unmarshal(rawItems, &items); err != nil {
		return ItemPage{}, fmt.Errorf("%s result: %q: %w", kind.Method(), kind.array(), err)
	}
	var p ItemPage
	if c, ok := pg["nextCursor"]; ok && !isNull(c) {
		if err := json.Unmarshal(c, &p.NextCursor); err != nil {
			return ItemPage{}, fmt.Errorf("%s result: nextCursor: %w", kind.Method(), err)
		}
	}
	for i, raw := range items {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(raw, &f); err != nil || f == nil {
			return ItemPage{}, fmt.Errorf("%s result: %s[%d]: not an object", kind.Method(), kind.array(), i)
		}
		var key string
		if err := json.Unmarshal(f[kind.KeyField()], &key); err != nil || key == "" {
			return ItemPage{}, fmt.Errorf("%s result: %s[%d]: no %q string", kind.Method(), kind.array(), i, kind.KeyField())
		}
		p.Items = append(p.Items, Item{Kind: kind, Raw: bytes.Clone(raw), Key: key})
	}
	return p, nil
}

// CheckItemText checks every string of an item, values and member names
// alike (its key, title, description, a prompt's arguments, annotations,
// _meta and any other field), for the characters CheckText refuses. Where
// is the path of the string, such as "arguments/0/description". It returns
// at most MaxTextProblems problems, in document order.
func CheckItemText(raw []byte) []TextProblem {
	sc := &textScan{}
	walkJSON(raw, func(path []string, _ bool, u []unit) {
		if sc.full() {
			return
		}
		sc.check(func() string { return strings.TrimPrefix(wherePath("", path), "/") }, u)
	})
	return sc.probs
}
