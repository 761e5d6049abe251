package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mcp-guard/mcp-guard/secrets"
)

// redactOut is the one place bytes pass on their way to a host (T1): the
// stdio host's writer and every HTTP host response (redactWriter) call it
// on each write, which is one message (a line, a JSON body, or one event).
// Every known secret in it, in any encoding, and every found credential
// ([secrets] redact_found) is replaced; what was replaced is recorded
// (server, name, encoding, where), never the value. When nothing matched,
// b itself is returned: the host gets the servers' bytes unchanged.
func (p *Proxy) redactOut(host string, b []byte) []byte {
	r := p.opts.Secrets
	if r == nil {
		return b
	}
	var out []byte // nil until something is replaced
	var hits []secrets.Hit
	for i := 0; i < len(b); {
		end := bytes.IndexByte(b[i:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += i
		}
		line := b[i:end]
		pre := 0
		if bytes.HasPrefix(line, []byte("data: ")) {
			pre = len("data: ")
		}
		body := bytes.TrimRight(line[pre:], "\r")
		red, h := r.RedactJSON(body)
		if len(h) > 0 {
			hits = append(hits, h...)
		}
		if out == nil && len(h) > 0 && !bytes.Equal(red, body) {
			out = append(make([]byte, 0, len(b)+64), b[:i]...)
		}
		if out != nil {
			out = append(out, line[:pre]...)
			out = append(out, red...)
			out = append(out, line[pre+len(body):]...)
			if end < len(b) {
				out = append(out, '\n')
			}
		}
		i = end + 1
	}
	if len(hits) > 0 {
		p.recordRedacted(host, b, hits)
	}
	if out == nil {
		return b
	}
	return out
}

// recordRedacted records what redactOut replaced in msg (event
// secret.redacted), off the host's path.
func (p *Proxy) recordRedacted(host string, msg []byte, hits []secrets.Hit) {
	message, session := messageName(msg), ""
	if p.opts.Lease != nil {
		session = p.opts.Lease.ID()
	}
	for _, h := range hits {
		p.log.Warn("credential redacted from a message to the host", "what", h.String(), "message", message)
	}
	done := p.pipe.RecordRedaction(session, host, message, hits)
	log := p.log
	go func() {
		if err := <-done; err != nil {
			log.Error("redaction not recorded", "err", err)
		}
	}()
}

// messageName says which message a write to the host was: its method, or
// "answer to <id>".
func messageName(msg []byte) string {
	for _, line := range bytes.Split(msg, []byte("\n")) {
		line = bytes.TrimPrefix(bytes.TrimRight(line, "\r"), []byte("data: "))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Method != "" {
			return m.Method
		}
		if len(m.ID) > 0 {
			return "answer to " + string(m.ID)
		}
	}
	return "text"
}

// redactWriter is an HTTP host's response as it leaves mcp-guard: every
// write passes redactOut.
type redactWriter struct {
	http.ResponseWriter
	p    *Proxy
	host string
}

func (w redactWriter) Write(b []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(w.p.redactOut(w.host, b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w redactWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w redactWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
