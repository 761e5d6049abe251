package approvals

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// A request an upstream makes of the host (sampling/createMessage,
// elicitation/create) is held as a Request with Class ledger.KindSampling or
// ledger.KindElicitation (no tool rule can have those classes), Tool the
// method and Args its params. The operator reads what the host would be
// asked, the parts that matter first: the messages the host's model would
// read, the form the user would fill in, or the URL the user would open;
// then the whole request.

const (
	wrapBytes    = 160 // text the operator must read whole is wrapped, not cut, at about this
	maxTextLines = 60  // lines of wrapped text per section; the middle is cut past this
	maxMessages  = 20  // sampling messages summarised; the rest are in the request below
	maxFields    = 40  // form fields summarised
)

func (v view) presentRequest(b *strings.Builder, r Request) {
	doc, err := canon.Decode(r.Args)
	params, _ := doc.(map[string]any)
	fmt.Fprintf(b, "server    %s\n", v.show(r.Server, maxLineBytes))
	switch {
	case err != nil || params == nil:
		fmt.Fprintf(b, "request   %s (its params are not a JSON object)\n", v.show(r.Tool, maxLineBytes))
	case r.Class == ledger.KindSampling:
		fmt.Fprintf(b, "request   %s: the server asks the host's model to write a reply to these messages\n", v.show(r.Tool, maxLineBytes))
		v.presentSampling(b, params)
	case str(params["mode"]) == "url":
		fmt.Fprintf(b, "request   %s (URL mode): the server asks the user to OPEN THIS URL\n", v.show(r.Tool, maxLineBytes))
		v.presentURL(b, params)
	default:
		fmt.Fprintf(b, "request   %s (form): the server asks the user to fill in this form\n", v.show(r.Tool, maxLineBytes))
		v.presentForm(b, params)
	}
	b.WriteString("the whole request\n")
	v.writeDocument(b, r.Args)
}

func (v view) presentSampling(b *strings.Builder, p map[string]any) {
	msgs, _ := p["messages"].([]any)
	fmt.Fprintf(b, "messages  %d\n", len(msgs))
	var lines []string
	for i, m := range msgs {
		if i == maxMessages && !v.full {
			lines = append(lines, fmt.Sprintf("…[%d more messages: see the whole request]…", len(msgs)-maxMessages))
			break
		}
		mm, _ := m.(map[string]any)
		blocks, ok := mm["content"].([]any)
		if !ok {
			blocks = []any{mm["content"]}
		}
		lines = append(lines, fmt.Sprintf("[%d] %s", i+1, v.show(str(mm["role"]), 40)))
		for _, c := range blocks {
			lines = append(lines, v.contentLines(c)...)
		}
	}
	v.writeLines(b, "  ", v.cutLines(lines, maxTextLines))
	if s, ok := p["systemPrompt"].(string); ok {
		b.WriteString("system\n")
		v.writeLines(b, "    ", v.cutLines(wrap(s), maxTextLines))
	}
	if c := str(p["includeContext"]); c != "" && c != "none" {
		fmt.Fprintf(b, "context   %s: the host is asked to add context from %s\n", v.show(c, 40),
			map[bool]string{true: "ALL its servers", false: "this server"}[c == "allServers"])
	}
	if tools, ok := p["tools"].([]any); ok {
		var names []string
		for _, t := range tools {
			tm, _ := t.(map[string]any)
			names = append(names, safetext.Escape(str(tm["name"])))
		}
		fmt.Fprintf(b, "tools     %d offered to the model: %s\n", len(tools), v.cut(strings.Join(names, ", "), maxLineBytes))
	}
	if n, ok := p["maxTokens"]; ok {
		fmt.Fprintf(b, "maxTokens %s\n", v.show(fmt.Sprint(n), 40))
	}
}

// contentLines shows one content block: text wrapped, other kinds by type.
func (v view) contentLines(c any) []string {
	cm, _ := c.(map[string]any)
	switch t := str(cm["type"]); t {
	case "text":
		var out []string
		for _, l := range wrap(str(cm["text"])) {
			out = append(out, "    "+l)
		}
		return out
	case "image", "audio":
		return []string{fmt.Sprintf("    (%s %s, %d bytes of base64)", t, v.show(str(cm["mimeType"]), 80), len(str(cm["data"])))}
	default:
		return []string{fmt.Sprintf("    (%s content: see the whole request)", v.show(t, 40))}
	}
}

func (v view) presentURL(b *strings.Builder, p map[string]any) {
	raw := str(p["url"])
	b.WriteString("url       (every character outside ASCII is shown escaped)\n")
	v.writeLines(b, "    ", v.cutLines(wrapWith(raw, asciiOnly), maxTextLines))
	opens := "(the URL does not parse)"
	if u, err := url.Parse(raw); err == nil {
		switch {
		case u.Host == "":
			opens = asciiOnly(u.Scheme) + ": (no host)"
		default:
			opens = asciiOnly(u.Scheme) + "://" + asciiOnly(u.Hostname())
		}
		if u.User != nil {
			opens += "   (the URL carries user info before the host: " + asciiOnly(u.User.String()) + ")"
		}
	}
	fmt.Fprintf(b, "opens     %s\n", v.cut(opens, maxLineBytes))
	b.WriteString("message\n")
	v.writeLines(b, "    ", v.cutLines(wrap(str(p["message"])), maxTextLines))
}

func (v view) presentForm(b *strings.Builder, p map[string]any) {
	b.WriteString("message\n")
	v.writeLines(b, "    ", v.cutLines(wrap(str(p["message"])), maxTextLines))
	schema, _ := p["requestedSchema"].(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := schema["required"].([]any); ok {
		for _, k := range req {
			required[str(k)] = true
		}
	}
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(b, "fields    %d\n", len(names))
	var lines []string
	for i, k := range names {
		if i == maxFields && !v.full {
			lines = append(lines, fmt.Sprintf("…[%d more fields: see the whole request]…", len(names)-maxFields))
			break
		}
		f, _ := props[k].(map[string]any)
		kind := str(f["type"])
		if fm := str(f["format"]); fm != "" {
			kind += ", " + fm
		}
		if required[k] {
			kind += ", required"
		}
		line := fmt.Sprintf("%s (%s)", quote(k), safetext.Escape(kind))
		if d := str(f["description"]); d != "" {
			line += ": " + safetext.Escape(d)
		} else if d := str(f["title"]); d != "" {
			line += ": " + safetext.Escape(d)
		}
		lines = append(lines, line)
	}
	v.writeLines(b, "  ", lines)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// wrap escapes s and breaks it into lines of about wrapBytes, and after each
// escaped newline, so that text the operator must read is shown whole.
func wrap(s string) []string { return wrapWith(s, safetext.Escape) }

func wrapWith(s string, escape func(string) string) []string {
	var lines []string
	var cur strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		cur.WriteString(escape(s[i : i+size]))
		i += size
		if cur.Len() >= wrapBytes || r == '\n' {
			lines = append(lines, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 || len(lines) == 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// asciiOnly escapes s and every character outside ASCII besides, so a host
// name that looks like another (Cyrillic а for Latin a) cannot pass for it.
func asciiOnly(s string) string {
	var b strings.Builder
	for _, r := range safetext.Escape(s) {
		if r > 0x7E {
			fmt.Fprintf(&b, `\u{%04X}`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Title is one escaped line naming what approval a holds, for lists: the
// tool call, or the request a server makes of the host (for a URL-mode
// elicitation, the URL).
func Title(a ledger.Approval) string {
	switch a.Class {
	case ledger.KindSampling:
		return safetext.Escape(a.Server) + " asks the host's model to write (sampling)"
	case ledger.KindElicitation:
		doc, _ := canon.Decode(a.Args)
		p, _ := doc.(map[string]any)
		if str(p["mode"]) == "url" {
			return safetext.Escape(a.Server) + " asks the user to open a URL (elicitation): " + asciiOnly(str(p["url"]))
		}
		return safetext.Escape(a.Server) + " asks the user to fill in a form (elicitation)"
	}
	return safetext.Escape(a.Server + "/" + a.Tool)
}
