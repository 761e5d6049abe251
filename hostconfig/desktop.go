package hostconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxBytes is the largest config file read. Claude Desktop's own files are a
// few KiB.
const MaxBytes = 4 << 20

// DesktopServer is one mcpServers entry.
type DesktopServer struct {
	Name    string
	Command string            // stdio servers
	Args    []string          // stdio servers
	Env     map[string]string // stdio servers
	URL     string            // remote servers ("url" entries); Command is empty then
	Headers map[string]string // remote servers
	Type    string            // the "type" field, if present
	Raw     json.RawMessage   // the entry's bytes as in the file
}

// Stdio reports whether the host starts s as a local process.
func (s DesktopServer) Stdio() bool {
	return s.Command != "" && s.URL == "" && (s.Type == "" || s.Type == "stdio")
}

// Remote reports whether the host reaches s over HTTP (streamable HTTP or
// SSE), as mcp-guard can too.
func (s DesktopServer) Remote() bool {
	switch s.Type {
	case "", "http", "streamable-http", "streamableHttp", "sse":
		return s.URL != "" && s.Command == ""
	}
	return false
}

// DesktopConfig is one Claude Desktop config file as read.
type DesktopConfig struct {
	Path    string
	Raw     []byte          // the file's exact bytes
	Servers []DesktopServer // the mcpServers entries, in file order

	top     []desktopMember // the top-level members, in file order
	servers []desktopMember // the members of mcpServers, in file order
	hasMCP  bool            // the file has an mcpServers member
}

// desktopMember is one member of a JSON object, kept as it is in the file.
type desktopMember struct {
	name    string // unquoted
	rawName []byte // as in the file, quotes included
	value   []byte // as in the file
	at      int64  // byte offset of the value in the file
}

// LoadDesktop reads the config at path. A file that is not one JSON object, or
// whose mcpServers is not an object of entries, is refused with the line and
// column of the problem; a file without mcpServers has no servers.
func LoadDesktop(path string) (*DesktopConfig, error) {
	raw, err := Read(path)
	if err != nil {
		return nil, err
	}
	return ParseDesktop(path, raw)
}

// Read returns the bytes of the file at path, refusing a file larger than
// MaxBytes.
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("desktop: read %s: %w", path, bare(err))
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("desktop: read %s: %w", path, bare(err))
	}
	if len(raw) > MaxBytes {
		return nil, fmt.Errorf("desktop: read %s: the file is larger than %d bytes; a Claude Desktop config is a few KiB, so this is not one", path, MaxBytes)
	}
	return raw, nil
}

// bare drops the operation and path of a *fs.PathError: the message that
// wraps it names the path already.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ParseDesktop reads raw, the bytes of the config at path, like [LoadDesktop].
func ParseDesktop(path string, raw []byte) (*DesktopConfig, error) {
	if err := checkJSON(raw); err != nil {
		return nil, fmt.Errorf("desktop: parse %s: %w", path, err)
	}
	c := &DesktopConfig{Path: path, Raw: raw}
	top, err := readObject(raw, raw, 0, "the top level")
	if err != nil {
		return nil, fmt.Errorf("desktop: %s: %w", path, err)
	}
	c.top = top
	for _, m := range top {
		if m.name != "mcpServers" {
			continue
		}
		c.hasMCP = true
		c.servers, err = readObject(raw, m.value, m.at, "mcpServers")
		if err != nil {
			return nil, fmt.Errorf("desktop: %s: %w", path, err)
		}
	}
	for _, m := range c.servers {
		s, err := readServer(raw, m)
		if err != nil {
			return nil, fmt.Errorf("desktop: %s: %w", path, err)
		}
		c.Servers = append(c.Servers, s)
	}
	return c, nil
}

// checkJSON requires raw to be exactly one JSON value: no duplicate member
// names (which the host and mcp-guard could read differently), valid UTF-8,
// nothing but whitespace after it.
func checkJSON(raw []byte) error {
	d := jsontext.NewDecoder(bytes.NewReader(raw), strict()...)
	if _, err := d.ReadValue(); err != nil {
		if err == io.EOF {
			return errors.New("the file holds no JSON value (it is empty); want an object such as {\"mcpServers\": {}}")
		}
		return located(raw, err)
	}
	off := d.InputOffset()
	if _, err := d.ReadToken(); err != io.EOF {
		if err != nil {
			return located(raw, err)
		}
		ws := len(raw[off:]) - len(bytes.TrimLeft(raw[off:], " \t\r\n"))
		return fmt.Errorf("%s: unexpected data after the top-level value", lineCol(raw, int(off)+ws))
	}
	return nil
}

// strict are the decoder options: a member name twice in one object, or
// invalid UTF-8, is refused (jsontext's defaults, said here).
func strict() []jsontext.Options {
	return []jsontext.Options{jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(false)}
}

// located turns a jsontext error into "line L col C: what (at /pointer)".
func located(raw []byte, err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%s: unexpected end of file", lineCol(raw, len(raw)))
		}
		return err
	}
	what := "syntax error"
	if se.Err != nil {
		what = se.Err.Error()
	}
	ptr := se.JSONPointer
	if errors.Is(se.Err, jsontext.ErrDuplicateName) {
		what += " " + strconv.Quote(ptr.LastToken())
		ptr = ptr.Parent()
	}
	if ptr != "" {
		what += fmt.Sprintf(" (in %s)", ptr)
	}
	return fmt.Errorf("%s: %s", lineCol(raw, int(se.ByteOffset)), what)
}

// readObject reads the members of the object value, which starts at byte
// at of file (already checked to be valid JSON). what names the value in an
// error.
func readObject(file, value []byte, at int64, what string) ([]desktopMember, error) {
	d := jsontext.NewDecoder(bytes.NewReader(value), strict()...)
	if k := d.PeekKind(); k != '{' {
		return nil, fmt.Errorf("%s: %s is %s; want an object", lineCol(file, int(at)), what, kindName(k))
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, located(file, err)
	}
	var out []desktopMember
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return nil, located(file, err)
		}
		m := desktopMember{rawName: bytes.Clone(name)}
		unq, err := jsontext.AppendUnquote(nil, name)
		if err != nil {
			return nil, located(file, err)
		}
		m.name = string(unq)
		v, err := d.ReadValue()
		if err != nil {
			return nil, located(file, err)
		}
		m.value = bytes.Clone(v)
		m.at = at + d.InputOffset() - int64(len(v))
		out = append(out, m)
	}
	return out, nil
}

// readServer reads the fields of an entry that mcp-guard uses; the others
// stay in Raw.
func readServer(file []byte, m desktopMember) (DesktopServer, error) {
	s := DesktopServer{Name: m.name, Raw: json.RawMessage(m.value)}
	what := "mcpServers." + strconv.Quote(m.name)
	fields, err := readObject(file, m.value, m.at, what)
	if err != nil {
		return s, err
	}
	for _, f := range fields {
		kind := jsontext.Value(f.value).Kind()
		if kind == 'n' {
			continue // null: as if absent
		}
		bad := func(want string) error {
			return fmt.Errorf("%s: %s.%s is %s; want %s", lineCol(file, int(f.at)), what, f.name, kindName(kind), want)
		}
		switch f.name {
		case "command", "url", "type":
			var v string
			if kind != '"' || json.Unmarshal(f.value, &v) != nil {
				return s, bad("a string")
			}
			switch f.name {
			case "command":
				s.Command = v
			case "url":
				s.URL = v
			case "type":
				s.Type = v
			}
		case "args":
			if kind != '[' || json.Unmarshal(f.value, &s.Args) != nil {
				return s, bad("an array of strings")
			}
		case "env":
			if kind != '{' || json.Unmarshal(f.value, &s.Env) != nil {
				return s, bad("an object of strings")
			}
		case "headers":
			if kind != '{' || json.Unmarshal(f.value, &s.Headers) != nil {
				return s, bad("an object of strings")
			}
		}
	}
	return s, nil
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "not a JSON value"
}
